/* Shared basics for every Red Fox module: allocation that never returns NULL,
 * growable arrays, and the status object that carries a run-time error
 * message up to the command line. */
#ifndef RF_COMMON_H
#define RF_COMMON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define RF_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define RF_NORETURN __attribute__((noreturn))
#else
#define RF_PRINTF(a, b)
#define RF_NORETURN
#endif

/* Exit statuses of the redfox command. */
enum {
    RF_EXIT_OK = 0,
    RF_EXIT_COMPILE_ERROR = 1, /* syntax / type / semantic errors in the program */
    RF_EXIT_RUNTIME_ERROR = 2, /* bad fact row, division by zero, unreadable file */
    RF_EXIT_OUT_OF_MEMORY = 3,
    RF_EXIT_USAGE = 64
};

/* Allocation: on failure prints "redfox: error: out of memory (N bytes)" and
 * exits with RF_EXIT_OUT_OF_MEMORY. Out of memory is never a crash. */
void *rf_malloc(size_t n);
void *rf_calloc(size_t count, size_t size);
void *rf_realloc(void *p, size_t n);
char *rf_strdup(const char *s);
char *rf_strndup(const char *s, size_t n);
char *rf_sprintf(const char *fmt, ...) RF_PRINTF(1, 2); /* malloc'd */
RF_NORETURN void rf_out_of_memory(size_t n);
/* What rf_out_of_memory does first: the hook may leave by longjmp
 * (libredfox turns out of memory in its caller's thread into an error
 * status); when it returns, or none is set, the message is printed and the
 * process exits as above. Set once, before any thread allocates. */
typedef void (*rf_out_of_memory_hook)(size_t n);
void rf_set_out_of_memory_hook(rf_out_of_memory_hook hook);

/* Size computations that would overflow are treated as out of memory. */
size_t rf_mul_size(size_t a, size_t b);

/* Growable array: RF_VEC(int) v = {0}; RF_PUSH(v, 3); v.items[i], v.len */
#define RF_VEC(T) struct { T *items; size_t len, cap; }
#define RF_PUSH(v, x)                                                          \
    do {                                                                       \
        if ((v).len == (v).cap) {                                              \
            (v).cap = (v).cap ? 2 * (v).cap : 8;                               \
            (v).items = rf_realloc((v).items, rf_mul_size((v).cap, sizeof *(v).items)); \
        }                                                                      \
        (v).items[(v).len++] = (x);                                            \
    } while (0)
#define RF_VEC_FREE(v) do { free((v).items); (v).items = NULL; (v).len = (v).cap = 0; } while (0)

/* A run-time error: the first failure wins; callers check rf_status_failed()
 * and unwind. code is one of the RF_EXIT_* values. */
typedef struct rf_status {
    int code;
    char message[1024];
    bool placed; /* the message has its place (rf_status_locate): no second one */
} rf_status;

void rf_status_init(rf_status *st);
/* Records the error unless one is already recorded; returns false so that
 * callers can write `return rf_fail(st, ...)`. */
bool rf_fail(rf_status *st, int code, const char *fmt, ...) RF_PRINTF(3, 4);
static inline bool rf_status_failed(const rf_status *st) { return st->code != 0; }

/* Asks for transparent huge pages on a big array (>= 8 MB) before it is
 * first touched: fewer page faults while filling it, fewer TLB misses
 * when it is probed at random. Only a hint; does nothing where
 * unsupported. */
void rf_hint_huge_pages(void *p, size_t bytes);
/* Faults in the whole pages of [p, p + bytes) for writing, in one call
 * (MADV_POPULATE_WRITE), before an array that is certainly filled is
 * first touched: the kernel maps them without a trap a page, which cost
 * about a third of a fault in a VM. Only a hint; does nothing where
 * unsupported (Linux before 5.14) or on small ranges. */
void rf_prefault_pages(void *p, size_t bytes);

/* Reads a whole file; returns NULL and fills st on failure. */
char *rf_read_file(const char *path, size_t *len_out, rf_status *st);

/* Monotonic wall clock in seconds. */
double rf_now(void);

#endif
