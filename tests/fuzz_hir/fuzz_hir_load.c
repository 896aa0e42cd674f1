/* libFuzzer target for the .rfx loader: any byte string must either be
 * rejected with a message or load as a program that verifies, prints, and
 * survives a second round trip byte for byte. */
#include "hir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *devnull;
    if (!devnull)
        devnull = fopen("/dev/null", "w");
    rf_status st;
    rf_status_init(&st);
    rf_hprogram *p = rf_hir_deserialize(data, size, &st);
    if (!p) {
        if (st.code == 0 || st.message[0] == 0)
            abort(); /* rejected without saying why */
    } else {
        rf_status vs;
        rf_status_init(&vs);
        if (!rf_hir_verify(p, &vs))
            abort();
        if (devnull)
            rf_hir_print(p, devnull);
        size_t n1, n2;
        uint8_t *b1 = rf_hir_serialize(p, &n1);
        rf_hprogram *q = rf_hir_deserialize(b1, n1, &st);
        if (!q)
            abort();
        uint8_t *b2 = rf_hir_serialize(q, &n2);
        if (n1 != n2 || memcmp(b1, b2, n1) != 0)
            abort();
        free(b1);
        free(b2);
        rf_hir_free(q);
        rf_hir_free(p);
    }
    /* The loader interns the file's strings; start each input afresh so
     * the dictionary does not grow for the whole run. */
    rf_str_reset();
    return 0;
}
