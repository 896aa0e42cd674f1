/* See trace.h. */
#include "trace.h"
#include "rf_dot.h"
#include "rf_outfile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct trace_event {
    char *name;
    const char *cat;         /* a string constant */
    int track;
    double start, end;
    char *args;              /* JSON object members, or NULL */
} trace_event;

struct rf_trace {
    double t0;
    rf_outfile file;         /* opened by rf_trace_new, committed by rf_trace_write */
    RF_VEC(trace_event) events;
    size_t dropped;
};

rf_trace *rf_trace_new(double t0, const char *path, rf_status *st)
{
    rf_trace *t = rf_calloc(1, sizeof *t);
    t->t0 = t0;
    if (!rf_outfile_open(&t->file, path, st)) {
        free(t);
        return NULL;
    }
    return t;
}

void rf_trace_free(rf_trace *t)
{
    if (!t)
        return;
    rf_outfile_abort(&t->file);   /* (nothing, once committed) */
    for (size_t i = 0; i < t->events.len; i++) {
        free(t->events.items[i].name);
        free(t->events.items[i].args);
    }
    RF_VEC_FREE(t->events);
    free(t);
}

void rf_trace_slice(rf_trace *t, int track, const char *name, const char *cat, double start, double end,
                    char *args_json)
{
    if (t->events.len >= RF_TRACE_MAX_EVENTS) {
        t->dropped++;
        free(args_json);
        return;
    }
    trace_event e = {rf_strdup(name ? name : "?"), cat, track, start, end < start ? start : end, args_json};
    RF_PUSH(t->events, e);
}

char *rf_json_string(const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t cap = 3 * strlen((const char *)p) + 3, n = 0;   /* worst case: every byte becomes U+FFFD */
    cap = cap < 8 ? 8 : cap;
    char *out = rf_malloc(cap + 8);
    out[n++] = '"';
    while (*p) {
        int len = rf_utf8_length(p);
        if (len == 0) {   /* not UTF-8: U+FFFD */
            if (n + 3 >= cap)
                out = rf_realloc(out, (cap *= 2) + 8);
            memcpy(out + n, "\xEF\xBF\xBD", 3);
            n += 3;
            p++;
            continue;
        }
        if (n + 8 >= cap)
            out = rf_realloc(out, (cap *= 2) + 8);
        if (len > 1) {
            memcpy(out + n, p, (size_t)len);
            n += (size_t)len;
            p += len;
            continue;
        }
        unsigned char c = *p++;
        if (c == '"' || c == '\\') {
            out[n++] = '\\';
            out[n++] = (char)c;
        } else if (c == '\n') {
            memcpy(out + n, "\\n", 2);
            n += 2;
        } else if (c == '\t') {
            memcpy(out + n, "\\t", 2);
            n += 2;
        } else if (c < 0x20 || c == 0x7F) {
            n += (size_t)snprintf(out + n, 8, "\\u%04x", c);
        } else {
            out[n++] = (char)c;
        }
    }
    out[n++] = '"';
    out[n] = '\0';
    return out;
}

static const char *track_name(int track, char *buf, size_t cap)
{
    if (track == RF_TRACK_MAIN)
        return "CPU: main thread (interpreter)";
    if (track == RF_TRACK_GPU)
        return "GPU stream";
    snprintf(buf, cap, "CPU: worker %d", track - RF_TRACK_WORKER + 1);
    return buf;
}

static void write_metadata(FILE *f, const char *what, int track, const char *args)
{
    fprintf(f, ",\n{\"name\": \"%s\", \"ph\": \"M\", \"pid\": 1, \"tid\": %d, \"args\": {%s}}", what, track, args);
}

bool rf_trace_write(rf_trace *t, const char *program, const char *backend, rf_status *st)
{
    FILE *f = t->file.f;
    fputs("{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n", f);
    bool used[RF_TRACK_GPU + 1] = {false};
    for (size_t i = 0; i < t->events.len; i++) {
        const trace_event *e = &t->events.items[i];
        char *name = rf_json_string(e->name);
        fprintf(f, "%s{\"name\": %s, \"cat\": \"%s\", \"ph\": \"X\", \"ts\": %.3f, \"dur\": %.3f, \"pid\": 1, "
                   "\"tid\": %d, \"args\": {%s}}",
                i ? ",\n" : "", name, e->cat, (e->start - t->t0) * 1e6, (e->end - e->start) * 1e6, e->track,
                e->args ? e->args : "");
        free(name);
        if (e->track >= 0 && e->track <= RF_TRACK_GPU)
            used[e->track] = true;
    }
    if (t->events.len == 0)   /* the metadata below begins with a comma */
        fputs("{\"name\": \"run\", \"ph\": \"M\", \"pid\": 1, \"tid\": 1, \"args\": {}}", f);
    char *title = rf_sprintf("redfox run %s (backend %s)", program ? program : "?", backend ? backend : "?");
    char *title_json = rf_json_string(title);
    char *args = rf_sprintf("\"name\": %s", title_json);
    write_metadata(f, "process_name", RF_TRACK_MAIN, args);
    free(args);
    free(title_json);
    free(title);
    for (int track = 0; track <= RF_TRACK_GPU; track++) {
        if (!used[track])
            continue;
        char buf[64];
        args = rf_sprintf("\"name\": \"%s\"", track_name(track, buf, sizeof buf));
        write_metadata(f, "thread_name", track, args);
        free(args);
        /* the interpreter first, then the workers, then the GPU */
        args = rf_sprintf("\"sort_index\": %d", track);
        write_metadata(f, "thread_sort_index", track, args);
        free(args);
    }
    fprintf(f, "\n],\n\"otherData\": {\"generator\": \"redfox run --profile\", \"dropped_events\": \"%zu\"}}\n",
            t->dropped);
    if (ferror(f)) {
        rf_fail(st, RF_EXIT_RUNTIME_ERROR, "cannot write '%s': %s", t->file.path, strerror(errno));
        rf_outfile_abort(&t->file);
        return false;
    }
    return rf_outfile_commit(&t->file, st);
}
