/* libFuzzer target: any byte string must compile to a program or to
 * diagnostics, never to a crash, a sanitizer report or a leak. */
#include "frontend.h"

#include <stdlib.h>
#include <string.h>

/* The file name picks the dialect: fuzz_parser_souffle is this harness
 * built with RF_FUZZ_PROGRAM_NAME "fuzz.dl" (the Soufflé front end). */
#ifndef RF_FUZZ_PROGRAM_NAME
#define RF_FUZZ_PROGRAM_NAME "fuzz.lql"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    if (!sink)
        sink = fopen("/dev/null", "w");
    rf_source *src = rf_calloc(1, sizeof *src);
    src->path = rf_strdup(RF_FUZZ_PROGRAM_NAME);
    src->text = rf_malloc(size + 1);
    if (size)
        memcpy(src->text, data, size);
    src->text[size] = '\0';
    src->len = size;
    rf_diag diag;
    rf_diag_init(&diag, sink);
    rf_program *p = rf_compile_source(src, &diag);
    if (p && diag.errors)
        abort(); /* a program must come only without errors */
    if (!p && !diag.errors)
        abort();
    rf_program_free(p);
    rf_str_reset();
    return 0;
}
