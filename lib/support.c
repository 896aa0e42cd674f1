/* The library's plumbing (internal.h): the registry of live handles, error
 * messages, and the guard around everything that allocates. */
#include "internal.h"

#include "../primitives/rf_prims.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Registry ----
 * Live handles in an array, looked up by address only: a freed handle is
 * simply absent, so checking one never reads freed memory (a magic number
 * inside the handle could not be read after free without undefined
 * behaviour). Programs count their handles in dozens, not millions. */
typedef struct live {
    const void *handle;
    rfl_kind kind;
} live;

static pthread_mutex_t registry_mutex = PTHREAD_MUTEX_INITIALIZER;
static live *registry;
static size_t registry_len, registry_cap;

void rfl_registry_lock(void) { pthread_mutex_lock(&registry_mutex); }
void rfl_registry_unlock(void) { pthread_mutex_unlock(&registry_mutex); }

void rfl_register(const void *handle, rfl_kind kind)
{
    rfl_registry_lock();
    if (registry_len == registry_cap) {
        size_t cap = registry_cap ? 2 * registry_cap : 16;
        live *grown = realloc(registry, cap * sizeof *grown);
        if (!grown) {
            rfl_registry_unlock();
            rf_out_of_memory(cap * sizeof *grown);
        }
        registry = grown;
        registry_cap = cap;
    }
    registry[registry_len++] = (live){handle, kind};
    rfl_registry_unlock();
}

void rfl_unregister(const void *handle)
{
    rfl_registry_lock();
    for (size_t i = 0; i < registry_len; i++)
        if (registry[i].handle == handle) {
            registry[i] = registry[--registry_len];
            break;
        }
    if (registry_len == 0) {   /* nothing left for a leak checker to see */
        free(registry);
        registry = NULL;
        registry_cap = 0;
    }
    rfl_registry_unlock();
}

bool rfl_is_live(const void *handle, rfl_kind kind)
{
    if (!handle)
        return false;
    bool found = false;
    rfl_registry_lock();
    for (size_t i = 0; i < registry_len && !found; i++)
        found = registry[i].handle == handle && registry[i].kind == kind;
    rfl_registry_unlock();
    return found;
}

/* ---- Errors ---- */
static _Thread_local char last_error[1024];

RFL_API const char *redfox_last_error(void) { return last_error; }

redfox_status rfl_fail(rfl_error *on, redfox_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    if (on)
        memcpy(on->message, last_error, sizeof on->message);
    return status;
}

void rfl_clear(rfl_error *on)
{
    if (on)
        on->message[0] = '\0';
}

redfox_status rfl_bad_handle(const char *function, const char *what)
{
    return rfl_fail(NULL, REDFOX_ERROR_INVALID_HANDLE, "%s: not a live %s handle (NULL, freed, or of another kind)",
                    function, what);
}

RFL_API const char *redfox_status_name(redfox_status status)
{
    switch (status) {
    case REDFOX_OK: return "REDFOX_OK";
    case REDFOX_ERROR_INVALID_HANDLE: return "REDFOX_ERROR_INVALID_HANDLE";
    case REDFOX_ERROR_INVALID_ARGUMENT: return "REDFOX_ERROR_INVALID_ARGUMENT";
    case REDFOX_ERROR_STATE: return "REDFOX_ERROR_STATE";
    case REDFOX_ERROR_COMPILE: return "REDFOX_ERROR_COMPILE";
    case REDFOX_ERROR_UNKNOWN_PREDICATE: return "REDFOX_ERROR_UNKNOWN_PREDICATE";
    case REDFOX_ERROR_ARITY: return "REDFOX_ERROR_ARITY";
    case REDFOX_ERROR_TYPE: return "REDFOX_ERROR_TYPE";
    case REDFOX_ERROR_VALUE: return "REDFOX_ERROR_VALUE";
    case REDFOX_ERROR_RUNTIME: return "REDFOX_ERROR_RUNTIME";
    case REDFOX_ERROR_BACKEND: return "REDFOX_ERROR_BACKEND";
    case REDFOX_ERROR_OUT_OF_MEMORY: return "REDFOX_ERROR_OUT_OF_MEMORY";
    case REDFOX_ERROR_INTERNAL: return "REDFOX_ERROR_INTERNAL";
    }
    return "unknown status";
}

RFL_API const char *redfox_version(void) { return "0.1"; }

/* ---- The guard ----
 * rf_out_of_memory (common/) calls the hook before it would print and
 * exit; in a thread inside rfl_guarded the hook jumps back there instead.
 * Elsewhere (a worker thread of the CPU pool, the calling thread while it
 * runs pieces of a parallel operator, the GPU backend's host threads) it
 * returns, and the old behaviour remains: docs/api.md. */
static _Thread_local jmp_buf *oom_jump;
static pthread_once_t hook_once = PTHREAD_ONCE_INIT;
/* Compiling and running share process-wide state (string dictionary,
 * thread pool, GPU context): one at a time. */
static pthread_mutex_t engine_mutex;

static void oom_hook(size_t n)
{
    (void)n;
    jmp_buf *j = oom_jump;
    if (j && !rf_par_running_here()) {
        oom_jump = NULL;
        longjmp(*j, 1);
    }
}

static void init_once(void)
{
    pthread_mutex_init(&engine_mutex, NULL);
    rf_set_out_of_memory_hook(oom_hook);
}

redfox_status rfl_guarded(bool engine, redfox_status (*fn)(void *ctx), void *ctx, rfl_error *on)
{
    pthread_once(&hook_once, init_once);
    if (engine)
        pthread_mutex_lock(&engine_mutex);
    jmp_buf here;
    jmp_buf *volatile outer = oom_jump;
    volatile redfox_status status;
    if (setjmp(here) == 0) {
        oom_jump = &here;
        status = fn(ctx);
    } else {
        status = rfl_fail(on, REDFOX_ERROR_OUT_OF_MEMORY,
                          "out of memory (what the failed call had allocated is not freed)");
    }
    oom_jump = outer;
    if (engine)
        pthread_mutex_unlock(&engine_mutex);
    return status;
}
