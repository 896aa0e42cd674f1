/* Transitive closure of an edge list held in memory, through libredfox
 * (docs/api.md). Build against an installed Red Fox:
 *   cc tc.c $(pkg-config --cflags --libs redfox) -o tc
 * or with CMake: find_package(Redfox) and link Redfox::redfox
 * (examples/CMakeLists.txt). Usage: ./tc [cpu|gpu|auto]
 * Prints the paths, one "x -> y" a line, then their count. */
#include <redfox.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char program[] =
    "edge(x, y) -> int64(x), int64(y).\n"
    "path(x, y) -> int64(x), int64(y).\n"
    "path(x, y) <- edge(x, y).\n"
    "path(x, z) <- path(x, y), edge(y, z).\n";

/* Reports a failed call and its message; returns nonzero. */
static int failed(redfox_status s, const char *what)
{
    fprintf(stderr, "tc: %s: %s: %s\n", what, redfox_status_name(s), redfox_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    /* A chain 1 -> 2 -> 3 -> 4 and a cycle 5 -> 6 -> 5. */
    const int64_t from[] = {1, 2, 3, 5, 6};
    const int64_t to[] = {2, 3, 4, 6, 5};
    const size_t nedges = sizeof from / sizeof from[0];
    redfox_backend backend = REDFOX_BACKEND_AUTO;
    if (argc > 1)
        backend = strcmp(argv[1], "cpu") == 0 ? REDFOX_BACKEND_CPU
                  : strcmp(argv[1], "gpu") == 0 ? REDFOX_BACKEND_GPU
                                                : REDFOX_BACKEND_AUTO;

    redfox_program *prog = NULL;
    redfox_run *run = NULL;
    redfox_status s;
    int rc = 1;
    if ((s = redfox_program_new(&prog)) != REDFOX_OK) {
        failed(s, "redfox_program_new");
        goto done;
    }
    if ((s = redfox_program_compile_text(prog, "tc.lql", program)) != REDFOX_OK) {
        fputs(redfox_program_diagnostics(prog), stderr);
        failed(s, "compile");
        goto done;
    }
    if ((s = redfox_run_new(prog, &run)) != REDFOX_OK) {
        failed(s, "redfox_run_new");
        goto done;
    }
    redfox_column edges[2] = {{REDFOX_COLUMN_INT64, from}, {REDFOX_COLUMN_INT64, to}};
    if ((s = redfox_run_add_facts(run, "edge", nedges, 2, edges)) != REDFOX_OK ||
        (s = redfox_run_set_backend(run, backend)) != REDFOX_OK || (s = redfox_run_execute(run)) != REDFOX_OK) {
        failed(s, "run");
        goto done;
    }
    size_t n = 0;
    if ((s = redfox_run_result_rows(run, "path", &n)) != REDFOX_OK) {
        failed(s, "results");
        goto done;
    }
    int64_t *xs = malloc((n ? n : 1) * sizeof *xs), *ys = malloc((n ? n : 1) * sizeof *ys);
    if (!xs || !ys || (s = redfox_run_copy_int64(run, "path", 0, xs, n)) != REDFOX_OK ||
        (s = redfox_run_copy_int64(run, "path", 1, ys, n)) != REDFOX_OK) {
        failed(s, "copying the results");
    } else {
        for (size_t i = 0; i < n; i++)
            printf("%lld -> %lld\n", (long long)xs[i], (long long)ys[i]);
        const char *backend_name = "?";
        redfox_run_backend_used(run, &backend_name, NULL);
        printf("%zu paths (backend %s)\n", n, backend_name);
        rc = 0;
    }
    free(xs);
    free(ys);
done:
    redfox_run_free(run);
    redfox_program_free(prog);
    return rc;
}
