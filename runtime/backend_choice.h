/* `--backend=auto`: which backend a run gets, decided before any device
 * starts. Starting the GPU backend costs about 0.4 s (driver, context,
 * NVRTC), more than the whole of a run over a small input on the CPU; so
 * inputs below a threshold of rows run on the CPU without the GPU being
 * tried, larger ones on the GPU when there is one. The rows are those of
 * the program's inputs (inline facts and input files, lines counted, and
 * only up to the threshold), known before anything is loaded. */
#ifndef RF_BACKEND_CHOICE_H
#define RF_BACKEND_CHOICE_H

#include <stdbool.h>
#include <stddef.h>

#include "runtime.h"

/* Inputs of fewer rows than this run on the CPU under --backend=auto. */
#define RF_AUTO_CPU_ROWS_DEFAULT 25000

/* The threshold: RF_AUTO_CPU_ROWS when it is a number (0: never prefer the
 * CPU), else RF_AUTO_CPU_ROWS_DEFAULT. env is the variable's value (may be
 * NULL). */
size_t rf_auto_cpu_threshold(const char *env);

/* Whether inputs of input_rows rows should run on the CPU (pure). */
bool rf_auto_prefers_cpu(size_t input_rows, size_t threshold);

/* Rows of p's inputs as its LOADs will read them (inline facts, the input
 * file or its --input override), counting file lines only until the total
 * reaches cap (the answer is then cap). A file that cannot be read counts
 * as nothing (its LOAD reports the error). */
size_t rf_input_rows_upto(const rf_hprogram *p, int ninputs, const rf_input_override *inputs, size_t cap);

#endif
