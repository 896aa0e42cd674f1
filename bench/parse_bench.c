/* Times the parse part of a LOAD (docs/performance.md): no sort, no dedup.
 *
 *   parse_bench FILE TYPES [THREADS] [REPS] [MODE]
 *       TYPES: one letter a column: i int32, l int64, d date, 2 decimal[2],
 *       s string, x a string the program does not read. MODE "read"
 *       (default): rf_read_facts into a fresh table (reading the file and
 *       faulting in the columns included); "parse":
 *       rf_parse_facts of the text in memory into a table whose columns
 *       are already touched (the parse alone). Prints the best and median
 *       of REPS (default 20) in ms and MB/s, and the best CPU time (all
 *       threads).
 *
 * Build (after the main Release build in build/; the "before" figures
 * linked the old runtime/io.c's object ahead of the libraries):
 *   cc -O3 -DNDEBUG -D_POSIX_C_SOURCE=200809L -std=c11 -Icommon -Iprimitives -Iruntime \
 *      bench/parse_bench.c build/runtime/librf_runtime.a build/primitives/librf_primitives.a \
 *      build/harmony_ir/librf_harmony_ir.a build/common/librf_common.a -lpthread -lm -o /tmp/parse_bench */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "rf_prims.h"
#include "runtime.h"

/* CPU seconds of all threads: steadier than the wall clock on a shared
 * machine (time spent waiting for a core does not count). */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: parse_bench FILE TYPES [THREADS] [REPS]\n");
        return 2;
    }
    const char *path = argv[1];
    int arity = (int)strlen(argv[2]);
    rf_type types[64];
    bool needed[64];
    if (arity > 64)
        arity = 64;
    for (int c = 0; c < arity; c++) {
        char k = argv[2][c];
        needed[c] = k != 'x';
        types[c] = k == 'i' ? RF_TYPE_INT32 : k == 'l' ? RF_TYPE_INT64 : k == 'd' ? RF_TYPE_DATE
                 : k == '2' ? RF_TYPE_DECIMAL0 + 2 : RF_TYPE_STRING;
    }
    int threads = argc > 3 ? atoi(argv[3]) : 1, reps = argc > 4 ? atoi(argv[4]) : 20;
    bool parse_only = argc > 5 && strcmp(argv[5], "parse") == 0;
    rf_prims_set_threads(threads);
    struct stat sb;
    if (stat(path, &sb) != 0) {
        perror(path);
        return 1;
    }
    double *ms = calloc((size_t)reps, sizeof *ms), best_cpu = 1e30;
    size_t rows = 0, len = 0;
    rf_status st;
    rf_status_init(&st);
    char *text = parse_only ? rf_read_file(path, &len, &st) : NULL;
    rf_table reused;
    rf_table_init(&reused, arity);
    for (int r = 0; r < reps; r++) {
        rf_table fresh, *t = parse_only ? &reused : &fresh;
        if (parse_only)
            t->nrows = 0; /* its columns stay: no page faults */
        else
            rf_table_init(t, arity);
        double t0 = rf_now(), c0 = cpu_now();
        bool ok = parse_only ? rf_parse_facts(path, text, len, rf_format_from_path(path), arity, types, needed, t, &st)
                             : rf_read_facts(path, rf_format_from_path(path), arity, types, needed, t, &st);
        ms[r] = (rf_now() - t0) * 1e3;
        double cpu = (cpu_now() - c0) * 1e3;
        best_cpu = cpu < best_cpu ? cpu : best_cpu;
        if (!ok) {
            fprintf(stderr, "%s\n", st.message);
            return 1;
        }
        rows = t->nrows;
        if (!parse_only)
            rf_table_free(t);
    }
    rf_table_free(&reused);
    free(text);
    qsort(ms, (size_t)reps, sizeof *ms, cmp_double);
    double mb = (double)sb.st_size / 1e6;
    printf("%s %s: %zu rows, %.1f MB, %d thread%s: best %.3f ms (%.0f MB/s), median %.3f ms (%.0f MB/s); best CPU time %.3f ms\n", path,
           parse_only ? "parse" : "read", rows, mb, threads, threads == 1 ? "" : "s", ms[0], mb / ms[0] * 1e3, ms[reps / 2],
           mb / ms[reps / 2] * 1e3, best_cpu);
    free(ms);
    return 0;
}
