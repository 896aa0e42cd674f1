/* --backend=auto's choice from the input sizes (backend_choice.h). */
#include "backend_choice.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t rf_auto_cpu_threshold(const char *env)
{
    if (!env || !*env)
        return RF_AUTO_CPU_ROWS_DEFAULT;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(env, &end, 10);
    if (*end || errno || env[0] == '-')
        return RF_AUTO_CPU_ROWS_DEFAULT;
    return (size_t)v;
}

bool rf_auto_prefers_cpu(size_t input_rows, size_t threshold) { return input_rows < threshold; }

/* Lines of the file at path (a last line without a newline counts), read
 * until the count reaches cap. */
static size_t file_lines_upto(const char *path, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    char buf[1 << 16];
    size_t lines = 0, n;
    bool open_line = false;
    while (lines < cap && (n = fread(buf, 1, sizeof buf, f)) > 0) {
        for (const char *p = buf, *e = buf + n; (p = memchr(p, '\n', (size_t)(e - p))) != NULL; p++)
            lines++;
        open_line = buf[n - 1] != '\n';
    }
    fclose(f);
    return lines + (open_line && lines < cap);
}

size_t rf_input_rows_upto(const rf_hprogram *p, int ninputs, const rf_input_override *inputs, size_t cap)
{
    size_t rows = 0;
    for (int b = 0; b < p->nblocks && rows < cap; b++)
        for (int k = 0; k < p->blocks[b].nkernels && rows < cap; k++) {
            const rf_kernel *kn = &p->blocks[b].kernels[k];
            if (kn->op != RF_K_LOAD || kn->out < 0)
                continue;
            const rf_hvar *hv = &p->vars[kn->out];
            const char *path = hv->input_path;
            for (int i = 0; i < ninputs; i++)
                if (hv->pred && strcmp(inputs[i].pred, hv->pred) == 0)
                    path = inputs[i].path;
            rows += hv->nfacts;
            if (path && rows < cap)
                rows += file_lines_upto(path, cap - rows);
        }
    return rows < cap ? rows : cap;
}
