#define _DEFAULT_SOURCE /* madvise */
#define _POSIX_C_SOURCE 200809L
#include "rf_common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static rf_out_of_memory_hook oom_hook;

void rf_set_out_of_memory_hook(rf_out_of_memory_hook hook) { oom_hook = hook; }

void rf_out_of_memory(size_t n)
{
    if (oom_hook)
        oom_hook(n);
    fprintf(stderr, "redfox: error: out of memory (allocating %zu bytes)\n", n);
    exit(RF_EXIT_OUT_OF_MEMORY);
}

size_t rf_mul_size(size_t a, size_t b)
{
    if (b != 0 && a > SIZE_MAX / b)
        rf_out_of_memory(SIZE_MAX);
    return a * b;
}

void *rf_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        rf_out_of_memory(n);
    return p;
}

void *rf_calloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        rf_out_of_memory(rf_mul_size(count, size));
    return p;
}

void *rf_realloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        rf_out_of_memory(n);
    return q;
}

char *rf_strndup(const char *s, size_t n)
{
    char *d = rf_malloc(n + 1);
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

char *rf_strdup(const char *s) { return rf_strndup(s, strlen(s)); }

char *rf_sprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    char *buf = rf_malloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(buf, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return buf;
}

void rf_status_init(rf_status *st)
{
    st->code = 0;
    st->message[0] = '\0';
    st->placed = false;
}

bool rf_fail(rf_status *st, int code, const char *fmt, ...)
{
    if (st->code != 0)
        return false;
    st->code = code ? code : RF_EXIT_RUNTIME_ERROR;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(st->message, sizeof st->message, fmt, ap);
    va_end(ap);
    return false;
}

char *rf_read_file(const char *path, size_t *len_out, rf_status *st)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        rf_fail(st, RF_EXIT_RUNTIME_ERROR, "cannot open '%s': %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = rf_malloc(cap);
    for (;;) {
        if (len + 1 >= cap) {
            cap = rf_mul_size(cap, 2);
            buf = rf_realloc(buf, cap);
        }
        size_t got = fread(buf + len, 1, cap - len - 1, f);
        len += got;
        if (got == 0) {
            if (ferror(f)) {
                rf_fail(st, RF_EXIT_RUNTIME_ERROR, "cannot read '%s': %s", path, strerror(errno));
                fclose(f);
                free(buf);
                return NULL;
            }
            break;
        }
    }
    fclose(f);
    buf[len] = '\0';
    if (len_out)
        *len_out = len;
    return buf;
}

void rf_hint_huge_pages(void *p, size_t bytes)
{
#ifdef MADV_HUGEPAGE
    const uintptr_t huge = (uintptr_t)2 << 20;
    uintptr_t b = ((uintptr_t)p + huge - 1) & ~(huge - 1), e = ((uintptr_t)p + bytes) & ~(huge - 1);
    if (p && bytes >= 4 * huge && e > b)
        (void)madvise((void *)b, e - b, MADV_HUGEPAGE);
#else
    (void)p;
    (void)bytes;
#endif
}

void rf_prefault_pages(void *p, size_t bytes)
{
#ifdef MADV_POPULATE_WRITE
    const uintptr_t page = 4096;
    uintptr_t b = ((uintptr_t)p + page - 1) & ~(page - 1), e = ((uintptr_t)p + bytes) & ~(page - 1);
    if (p && e >= b + 16 * page)
        (void)madvise((void *)b, e - b, MADV_POPULATE_WRITE);
#else
    (void)p;
    (void)bytes;
#endif
}

double rf_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
