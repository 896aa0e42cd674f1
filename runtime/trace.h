/* `redfox run --profile FILE`: a Chrome / Perfetto trace-event file
 * (https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU,
 * the "JSON Array/Object Format"): complete events ("ph": "X") with
 * timestamps and durations in microseconds from the start of the run, one
 * process, one track ("thread") each for the interpreter's thread, every
 * pool worker that ran pieces, and the GPU stream. Events are kept in
 * memory and written at the end, whole or not at all (rf_outfile). */
#ifndef RF_TRACE_H
#define RF_TRACE_H

#include "rf_common.h"

/* Track ids: the interpreter's thread, pool worker w at RF_TRACK_WORKER +
 * w, and the GPU stream. */
enum { RF_TRACK_MAIN = 1, RF_TRACK_WORKER = 2, RF_TRACK_GPU = 1000 };

typedef struct rf_trace rf_trace;

/* t0: rf_now() at the start of the run (timestamps count from it). The
 * file at path is opened now, so that a path that cannot be written fails
 * before the run (NULL, st filled). */
rf_trace *rf_trace_new(double t0, const char *path, rf_status *st);
/* Frees t; a file not yet written is discarded (the path stays as it was). */
void rf_trace_free(rf_trace *t);

/* A complete event on `track` from `start` to `end` (rf_now() seconds).
 * name is any text (escaped when written); args_json is NULL or the
 * members of a JSON object without its braces ("\"rows_out\": 16"), taken
 * over (freed by the trace). Past RF_TRACE_MAX_EVENTS events are counted
 * but dropped (the file says how many). */
#define RF_TRACE_MAX_EVENTS 4000000
void rf_trace_slice(rf_trace *t, int track, const char *name, const char *cat, double start, double end,
                    char *args_json);

/* Writes the file: the events, then metadata naming the process
 * ("redfox run PROGRAM") and each track that has events. */
bool rf_trace_write(rf_trace *t, const char *program, const char *backend, rf_status *st);

/* s as a JSON string literal, quotes included (malloc'd): control
 * characters escaped, bytes that are not UTF-8 replaced by U+FFFD, so
 * that any name makes valid JSON. */
char *rf_json_string(const char *s);

#endif
