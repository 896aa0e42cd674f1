/* The C library (include/redfox.h) through its public interface only:
 * every call, with answers checked against an independent transitive
 * closure computed here, and misuse of every kind the interface promises
 * to catch (NULL, freed and wrongly typed handles, wrong arity and types,
 * bad values, calls out of order, out of memory). Runs under ASan/UBSan
 * in tests/run.sh, so a use after free the library failed to catch, or a
 * leak, fails the test too. */
#include <redfox.h>

#include <CUnit/Basic.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef RF_SOURCE_DIR
#error "RF_SOURCE_DIR must name the source tree"
#endif

#define OK(call) CU_ASSERT_EQUAL_FATAL((call), REDFOX_OK)

static const char tc_lql[] = "edge(x, y) -> int64(x), int64(y).\n"
                             "path(x, y) -> int64(x), int64(y).\n"
                             "path(x, y) <- edge(x, y).\n"
                             "path(x, z) <- path(x, y), edge(y, z).\n";

static const char tc_dl[] = ".decl edge(x: number, y: number)\n"
                            ".input edge\n"
                            ".decl path(x: number, y: number)\n"
                            ".output path\n"
                            "path(x, y) :- edge(x, y).\n"
                            "path(x, z) :- path(x, y), edge(y, z).\n";

/* ---- The oracle: reachability by depth-first search over a matrix ---- */
typedef struct graph {
    int n;                   /* nodes 0..n-1 */
    size_t nedges;
    int64_t *from, *to;
} graph;

static graph random_graph(int n, size_t nedges, unsigned seed)
{
    graph g = {n, nedges, malloc(nedges * sizeof(int64_t)), malloc(nedges * sizeof(int64_t))};
    for (size_t i = 0; i < nedges; i++) {
        seed = seed * 1103515245u + 12345u;
        g.from[i] = (seed >> 8) % (unsigned)n;
        seed = seed * 1103515245u + 12345u;
        g.to[i] = (seed >> 8) % (unsigned)n;
    }
    return g;
}

static void graph_free(graph *g)
{
    free(g->from);
    free(g->to);
}

/* reach[x * n + y]: y reachable from x in one or more steps. */
static unsigned char *closure(const graph *g)
{
    int n = g->n;
    unsigned char *adj = calloc((size_t)n * n, 1), *reach = calloc((size_t)n * n, 1);
    for (size_t i = 0; i < g->nedges; i++)
        adj[g->from[i] * n + g->to[i]] = 1;
    int *stack = malloc(sizeof(int) * (size_t)n * n + sizeof(int));
    for (int x = 0; x < n; x++) {
        int top = 0;
        for (int y = 0; y < n; y++)
            if (adj[x * n + y] && !reach[x * n + y]) {
                reach[x * n + y] = 1;
                stack[top++] = y;
            }
        while (top > 0) {
            int y = stack[--top];
            for (int z = 0; z < n; z++)
                if (adj[y * n + z] && !reach[x * n + z]) {
                    reach[x * n + z] = 1;
                    stack[top++] = z;
                }
        }
    }
    free(stack);
    free(adj);
    return reach;
}

/* Compiles src, runs it over g on the CPU, and checks path against the
 * oracle (rows in sorted order, each pair once). */
static void check_tc(const char *name, const char *src, redfox_language lang, const graph *g)
{
    redfox_program *p = NULL;
    redfox_run *r = NULL;
    OK(redfox_program_new(&p));
    OK(redfox_program_set_language(p, lang));
    OK(redfox_program_compile_text(p, name, src));
    OK(redfox_run_new(p, &r));
    redfox_column cols[2] = {{REDFOX_COLUMN_INT64, g->from}, {REDFOX_COLUMN_INT64, g->to}};
    OK(redfox_run_add_facts(r, "edge", g->nedges, 2, cols));
    OK(redfox_run_set_backend(r, REDFOX_BACKEND_CPU));
    OK(redfox_run_set_threads(r, 2));
    OK(redfox_run_execute(r));
    unsigned char *reach = closure(g);
    size_t expect = 0;
    for (int i = 0; i < g->n * g->n; i++)
        expect += reach[i];
    size_t n = 0;
    OK(redfox_run_result_rows(r, "path", &n));
    CU_ASSERT_EQUAL(n, expect);
    int64_t *xs = malloc((n + 1) * sizeof *xs), *ys = malloc((n + 1) * sizeof *ys);
    OK(redfox_run_copy_int64(r, "path", 0, xs, n));
    OK(redfox_run_copy_int64(r, "path", 1, ys, n));
    bool all_reachable = true, sorted = true;
    for (size_t i = 0; i < n; i++) {
        all_reachable &= xs[i] >= 0 && xs[i] < g->n && ys[i] >= 0 && ys[i] < g->n && reach[xs[i] * g->n + ys[i]];
        if (i > 0)
            sorted &= xs[i - 1] < xs[i] || (xs[i - 1] == xs[i] && ys[i - 1] < ys[i]);
    }
    CU_ASSERT(all_reachable);
    CU_ASSERT(sorted);
    free(xs);
    free(ys);
    free(reach);
    redfox_run_free(r);
    redfox_program_free(p);
}

static void test_version_and_names(void)
{
    CU_ASSERT_STRING_EQUAL(redfox_version(), "0.1");
    CU_ASSERT_STRING_EQUAL(redfox_status_name(REDFOX_OK), "REDFOX_OK");
    CU_ASSERT_STRING_EQUAL(redfox_status_name(REDFOX_ERROR_ARITY), "REDFOX_ERROR_ARITY");
    CU_ASSERT_STRING_EQUAL(redfox_status_name(REDFOX_ERROR_INTERNAL), "REDFOX_ERROR_INTERNAL");
    CU_ASSERT_STRING_EQUAL(redfox_status_name((redfox_status)999), "unknown status");
}

static void test_tc_against_oracle(void)
{
    graph g = random_graph(40, 70, 7);
    check_tc("tc.lql", tc_lql, REDFOX_LANGUAGE_AUTO, &g);
    check_tc("tc.dl", tc_dl, REDFOX_LANGUAGE_AUTO, &g);
    check_tc("<souffle text>", tc_dl, REDFOX_LANGUAGE_SOUFFLE, &g);
    graph_free(&g);
    graph empty = {3, 0, NULL, NULL};
    check_tc("tc.lql", tc_lql, REDFOX_LANGUAGE_LOGIQL, &empty);
}

static void test_program_metadata(void)
{
    redfox_program *p;
    OK(redfox_program_new(&p));
    int n;
    CU_ASSERT_EQUAL(redfox_program_predicate_count(p, &n), REDFOX_ERROR_STATE);
    OK(redfox_program_set_fuse(p, 0));
    OK(redfox_program_add_output(p, "edge"));
    OK(redfox_program_compile_text(p, NULL, tc_lql));
    CU_ASSERT_STRING_EQUAL(redfox_program_diagnostics(p), "");
    CU_ASSERT_STRING_EQUAL(redfox_program_error(p), "");
    OK(redfox_program_predicate_count(p, &n));
    CU_ASSERT_EQUAL(n, 2);
    const char *name;
    OK(redfox_program_predicate_name(p, 1, &name));
    CU_ASSERT_STRING_EQUAL(name, "path");
    CU_ASSERT_EQUAL(redfox_program_predicate_name(p, 2, &name), REDFOX_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(redfox_program_predicate_name(p, -1, &name), REDFOX_ERROR_INVALID_ARGUMENT);
    int arity;
    OK(redfox_program_arity(p, "path", &arity));
    CU_ASSERT_EQUAL(arity, 2);
    CU_ASSERT_EQUAL(redfox_program_arity(p, "nope", &arity), REDFOX_ERROR_UNKNOWN_PREDICATE);
    CU_ASSERT_PTR_NOT_NULL(strstr(redfox_last_error(), "nope"));
    CU_ASSERT_PTR_NOT_NULL(strstr(redfox_program_error(p), "nope"));
    redfox_type t;
    int scale = -1;
    OK(redfox_program_column_type(p, "edge", 1, &t, &scale));
    CU_ASSERT_EQUAL(t, REDFOX_TYPE_INT64);
    CU_ASSERT_EQUAL(scale, 0);
    CU_ASSERT_EQUAL(redfox_program_column_type(p, "edge", 2, &t, NULL), REDFOX_ERROR_INVALID_ARGUMENT);
    /* An explicit output replaces the default (every rule-defined one):
     * add_output(edge) makes edge the only output, as --print does. */
    OK(redfox_program_output_count(p, &n));
    CU_ASSERT_EQUAL(n, 1);
    OK(redfox_program_output_name(p, 0, &name));
    CU_ASSERT_STRING_EQUAL(name, "edge");
    CU_ASSERT_EQUAL(redfox_program_output_name(p, 1, &name), REDFOX_ERROR_INVALID_ARGUMENT);
    /* Options and compiling again after compiling. */
    CU_ASSERT_EQUAL(redfox_program_compile_text(p, NULL, tc_lql), REDFOX_ERROR_STATE);
    CU_ASSERT_EQUAL(redfox_program_set_fuse(p, 1), REDFOX_ERROR_STATE);
    CU_ASSERT_EQUAL(redfox_program_set_language(p, REDFOX_LANGUAGE_LOGIQL), REDFOX_ERROR_STATE);
    CU_ASSERT_EQUAL(redfox_program_set_fact_dir(p, "."), REDFOX_ERROR_STATE);
    CU_ASSERT_EQUAL(redfox_program_add_output(p, "path"), REDFOX_ERROR_STATE);
    redfox_program_free(p);
}

static void test_compile_errors(void)
{
    redfox_program *p;
    OK(redfox_program_new(&p));
    CU_ASSERT_EQUAL(redfox_program_compile_text(p, "bad.lql", "p(x) -> int64(x).\nq(x) <- p(x), r(x).\n"),
                    REDFOX_ERROR_COMPILE);
    const char *d = redfox_program_diagnostics(p);
    CU_ASSERT_PTR_NOT_NULL(strstr(d, "bad.lql:2:"));
    CU_ASSERT_PTR_NOT_NULL(strstr(d, "error:"));
    CU_ASSERT_PTR_NOT_NULL(strstr(redfox_program_error(p), "bad.lql"));
    redfox_run *r = (redfox_run *)1;
    CU_ASSERT_EQUAL(redfox_run_new(p, &r), REDFOX_ERROR_STATE);
    CU_ASSERT_PTR_NULL(r);
    redfox_program_free(p);

    OK(redfox_program_new(&p));
    CU_ASSERT_EQUAL(redfox_program_compile_file(p, "/nonexistent/x.lql"), REDFOX_ERROR_COMPILE);
    CU_ASSERT_PTR_NOT_NULL(strstr(redfox_program_diagnostics(p), "cannot open"));
    redfox_program_free(p);

    /* An output that names no predicate. */
    OK(redfox_program_new(&p));
    OK(redfox_program_add_output(p, "nope"));
    CU_ASSERT_EQUAL(redfox_program_compile_text(p, NULL, tc_lql), REDFOX_ERROR_UNKNOWN_PREDICATE);
    redfox_program_free(p);

    /* A Soufflé error names the .dl text. */
    OK(redfox_program_new(&p));
    OK(redfox_program_set_language(p, REDFOX_LANGUAGE_SOUFFLE));
    CU_ASSERT_EQUAL(redfox_program_compile_text(p, "s", ".decl a(x: number)\n.output b\n"), REDFOX_ERROR_COMPILE);
    CU_ASSERT_PTR_NOT_NULL(strstr(redfox_program_diagnostics(p), "s:2:"));
    redfox_program_free(p);
}

/* A file program: its @input file, replaced by facts from memory. */
static void test_compile_file_and_input_files(void)
{
    redfox_program *p;
    redfox_run *r;
    OK(redfox_program_new(&p));
    OK(redfox_program_compile_file(p, RF_SOURCE_DIR "/programs/tc.lql"));
    OK(redfox_run_new(p, &r));
    OK(redfox_run_set_backend(r, REDFOX_BACKEND_CPU));
    OK(redfox_run_execute(r));
    size_t n;
    OK(redfox_run_result_rows(r, "path", &n));
    CU_ASSERT_EQUAL(n, 16);   /* programs/tc.lql: 7 edges, 16 paths */
    /* int32 columns take INT64 arrays in range */
    const int64_t a[] = {1}, b[] = {2};
    redfox_column cols[2] = {{REDFOX_COLUMN_INT64, a}, {REDFOX_COLUMN_INT64, b}};
    OK(redfox_run_add_facts(r, "edge", 1, 2, cols));
    OK(redfox_run_execute(r));
    OK(redfox_run_result_rows(r, "path", &n));
    CU_ASSERT_EQUAL(n, 1);
    int64_t v;
    OK(redfox_run_get_int64(r, "path", 0, 1, &v));
    CU_ASSERT_EQUAL(v, 2);
    /* Without facts from memory, the file again. */
    OK(redfox_run_clear_facts(r));
    OK(redfox_run_execute(r));
    OK(redfox_run_result_rows(r, "path", &n));
    CU_ASSERT_EQUAL(n, 16);
    redfox_run_free(r);
    redfox_program_free(p);

    /* A Soufflé .input from the fact folder. */
    char dir[] = "/tmp/redfox_capi_XXXXXX";
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/edge.facts", dir);
    FILE *f = fopen(path, "w");
    fputs("1\t2\n2\t3\n", f);
    fclose(f);
    OK(redfox_program_new(&p));
    OK(redfox_program_set_fact_dir(p, dir));
    OK(redfox_program_compile_text(p, "tc.dl", tc_dl));
    OK(redfox_run_new(p, &r));
    OK(redfox_run_set_backend(r, REDFOX_BACKEND_CPU));
    OK(redfox_run_execute(r));
    OK(redfox_run_result_rows(r, "path", &n));
    CU_ASSERT_EQUAL(n, 3);
    redfox_run_free(r);
    redfox_program_free(p);
    unlink(path);
    rmdir(dir);
}

/* Every declared type in and out. */
static const char typed_lql[] =
    "item(name, price, ok, day, amount) -> string(name), float64(price), bool(ok), date(day), decimal[2](amount).\n"
    "small(n) -> int32(n).\n"
    "copy(name, price, ok, day, amount) -> string(name), float64(price), bool(ok), date(day), decimal[2](amount).\n"
    "copy(n, p, o, d, a) <- item(n, p, o, d, a).\n"
    "twice(n) -> int32(n).\n"
    "twice(m) <- small(n), m = n * 2.\n";

static void test_types(void)
{
    redfox_program *p;
    redfox_run *r;
    OK(redfox_program_new(&p));
    OK(redfox_program_compile_text(p, "typed.lql", typed_lql));
    redfox_type t;
    int scale;
    OK(redfox_program_column_type(p, "item", 4, &t, &scale));
    CU_ASSERT_EQUAL(t, REDFOX_TYPE_DECIMAL);
    CU_ASSERT_EQUAL(scale, 2);
    OK(redfox_program_column_type(p, "item", 3, &t, NULL));
    CU_ASSERT_EQUAL(t, REDFOX_TYPE_DATE);
    OK(redfox_program_column_type(p, "small", 0, &t, NULL));
    CU_ASSERT_EQUAL(t, REDFOX_TYPE_INT32);
    OK(redfox_run_new(p, &r));
    const char *names[] = {"pear", "apple", "a\tb\\c", ""};
    const double prices[] = {1.5, -0.0, 1e300, 3.25};
    const uint8_t oks[] = {1, 0, 7, 0};
    const int64_t days[] = {0, 1, -1, 9};      /* 1970-01-01, 01-02, 1969-12-31, 01-10 */
    const char *amounts[] = {"12.5", "-0.05", "7", "0"};
    redfox_column cols[5] = {{REDFOX_COLUMN_STRING, names},
                             {REDFOX_COLUMN_FLOAT64, prices},
                             {REDFOX_COLUMN_BOOL, oks},
                             {REDFOX_COLUMN_INT64, days},
                             {REDFOX_COLUMN_STRING, amounts}};
    OK(redfox_run_add_facts(r, "item", 4, 5, cols));
    /* Text for every type that is not a string. */
    const char *names2[] = {"zebra"}, *prices2[] = {"2.5"}, *oks2[] = {"true"}, *days2[] = {"2024-02-29"},
               *amounts2[] = {"1.25"};
    redfox_column text_cols[5] = {{REDFOX_COLUMN_STRING, names2},
                                  {REDFOX_COLUMN_STRING, prices2},
                                  {REDFOX_COLUMN_STRING, oks2},
                                  {REDFOX_COLUMN_STRING, days2},
                                  {REDFOX_COLUMN_STRING, amounts2}};
    OK(redfox_run_add_facts(r, "item", 1, 5, text_cols));
    const int64_t small[] = {3, -4, 3};
    redfox_column small_col = {REDFOX_COLUMN_INT64, small};
    OK(redfox_run_add_facts(r, "small", 3, 1, &small_col));
    OK(redfox_run_set_backend(r, REDFOX_BACKEND_CPU));
    OK(redfox_run_execute(r));
    size_t n;
    OK(redfox_run_result_rows(r, "copy", &n));
    CU_ASSERT_EQUAL_FATAL(n, 5);
    /* Sorted by the string's text: "", "a\tb\\c", "apple", "pear", "zebra". */
    const char *s;
    const char *order[] = {"", "a\tb\\c", "apple", "pear", "zebra"};
    for (size_t i = 0; i < 5; i++) {
        OK(redfox_run_get_string(r, "copy", i, 0, &s));
        CU_ASSERT_STRING_EQUAL(s, order[i]);
    }
    const char *strs[5];
    OK(redfox_run_copy_string(r, "copy", 0, strs, 5));
    CU_ASSERT_STRING_EQUAL(strs[3], "pear");
    double d;
    OK(redfox_run_get_float64(r, "copy", 3, 1, &d));   /* pear */
    CU_ASSERT_EQUAL(d, 1.5);
    OK(redfox_run_get_float64(r, "copy", 2, 1, &d));   /* apple: -0.0 normalised */
    CU_ASSERT(d == 0.0 && !signbit(d));
    double ds[5];
    OK(redfox_run_copy_float64(r, "copy", 1, ds, 5));
    CU_ASSERT_EQUAL(ds[1], 1e300);
    int64_t v;
    OK(redfox_run_get_int64(r, "copy", 1, 2, &v));     /* bool 7 -> true */
    CU_ASSERT_EQUAL(v, 1);
    OK(redfox_run_get_int64(r, "copy", 1, 3, &v));     /* date -1 */
    CU_ASSERT_EQUAL(v, -1);
    OK(redfox_run_get_int64(r, "copy", 4, 3, &v));     /* 2024-02-29 */
    CU_ASSERT_EQUAL(v, 19782);
    OK(redfox_run_get_int64(r, "copy", 3, 4, &v));     /* decimal 12.5 -> 1250 */
    CU_ASSERT_EQUAL(v, 1250);
    char buf[64];
    size_t len;
    OK(redfox_run_format_value(r, "copy", 2, 4, buf, sizeof buf, &len));
    CU_ASSERT_STRING_EQUAL(buf, "-0.05");
    CU_ASSERT_EQUAL(len, 5);
    OK(redfox_run_format_value(r, "copy", 1, 3, buf, sizeof buf, NULL));
    CU_ASSERT_STRING_EQUAL(buf, "1969-12-31");
    OK(redfox_run_format_value(r, "copy", 1, 2, buf, sizeof buf, NULL));
    CU_ASSERT_STRING_EQUAL(buf, "true");
    OK(redfox_run_format_value(r, "copy", 1, 0, buf, sizeof buf, NULL));
    CU_ASSERT_STRING_EQUAL(buf, "a\tb\\c");            /* strings as they are, not escaped */
    OK(redfox_run_format_value(r, "copy", 3, 0, buf, 3, &len));
    CU_ASSERT_STRING_EQUAL(buf, "pe");                 /* cut, the whole length told */
    CU_ASSERT_EQUAL(len, 4);
    OK(redfox_run_format_value(r, "copy", 3, 0, NULL, 0, &len));
    CU_ASSERT_EQUAL(len, 4);
    /* int32: deduplicated, computed, sorted signed */
    OK(redfox_run_result_rows(r, "twice", &n));
    CU_ASSERT_EQUAL_FATAL(n, 2);
    OK(redfox_run_get_int64(r, "twice", 0, 0, &v));
    CU_ASSERT_EQUAL(v, -8);
    /* wrong getter types */
    CU_ASSERT_EQUAL(redfox_run_get_float64(r, "twice", 0, 0, &d), REDFOX_ERROR_TYPE);
    CU_ASSERT_EQUAL(redfox_run_get_string(r, "twice", 0, 0, &s), REDFOX_ERROR_TYPE);
    CU_ASSERT_EQUAL(redfox_run_get_int64(r, "copy", 0, 0, &v), REDFOX_ERROR_TYPE);
    CU_ASSERT_EQUAL(redfox_run_get_int64(r, "copy", 0, 1, &v), REDFOX_ERROR_TYPE);
    CU_ASSERT_EQUAL(redfox_run_copy_string(r, "twice", 0, strs, 5), REDFOX_ERROR_TYPE);
    CU_ASSERT_EQUAL(redfox_run_copy_float64(r, "twice", 0, ds, 5), REDFOX_ERROR_TYPE);
    int64_t vs[5];
    CU_ASSERT_EQUAL(redfox_run_copy_int64(r, "copy", 1, vs, 5), REDFOX_ERROR_TYPE);
    CU_ASSERT_PTR_NOT_NULL(strstr(redfox_run_error(r), "float64"));
    redfox_run_free(r);
    redfox_program_free(p);
}

/* Facts the library must refuse, leaving what was added before alone. */
static void test_bad_facts(void)
{
    redfox_program *p;
    redfox_run *r;
    OK(redfox_program_new(&p));
    OK(redfox_program_compile_text(p, "typed.lql", typed_lql));
    OK(redfox_run_new(p, &r));
    const int64_t ints[] = {1, 2, 3};
    const double floats[] = {1.0, NAN, INFINITY};
    const char *texts[] = {"x", NULL, "y"};
    const char *bad_ints[] = {"12", "abc", "1"};
    const char *bad_dates[] = {"2023-02-29"};
    const char *bad_decimals[] = {"1.234"};
    const int64_t big[] = {(int64_t)1 << 40};
    const int64_t ancient[] = {-800000};
    redfox_column c_int = {REDFOX_COLUMN_INT64, ints}, c_float = {REDFOX_COLUMN_FLOAT64, floats},
                  c_text = {REDFOX_COLUMN_STRING, texts}, c_bad_ints = {REDFOX_COLUMN_STRING, bad_ints},
                  c_big = {REDFOX_COLUMN_INT64, big}, c_null = {REDFOX_COLUMN_INT64, NULL},
                  c_unknown = {(redfox_column_kind)42, ints};
    /* arity */
    CU_ASSERT_EQUAL(redfox_run_add_facts(r, "small", 1, 2, (redfox_column[]){c_int, c_int}), REDFOX_ERROR_ARITY);
    CU_ASSERT_EQUAL(redfox_run_add_facts(r, "small", 1, 0, NULL), REDFOX_ERROR_ARITY);
    CU_ASSERT_PTR_NOT_NULL(strstr(redfox_run_error(r), "has 1 column"));
    /* types */
    CU_ASSERT_EQUAL(redfox_run_add_facts(r, "small", 1, 1, &c_float), REDFOX_ERROR_TYPE);
    CU_ASSERT_PTR_NOT_NULL(strstr(redfox_last_error(), "int32"));
    redfox_column item_ints[5] = {c_int, c_float, {REDFOX_COLUMN_BOOL, ints}, c_int, c_text};
    CU_ASSERT_EQUAL(redfox_run_add_facts(r, "item", 1, 5, item_ints), REDFOX_ERROR_TYPE);   /* int into string */
    redfox_column item_dec[5] = {c_text, c_float, {REDFOX_COLUMN_BOOL, ints}, c_int, c_int};
    CU_ASSERT_EQUAL(redfox_run_add_facts(r, "item", 1, 5, item_dec), REDFOX_ERROR_TYPE);    /* int into decimal */
    CU_ASSERT_EQUAL(redfox_run_add_facts(r, "small", 1, 1, &c_unknown), REDFOX_ERROR_INVALID_ARGUMENT);
    /* values */
    OK(redfox_run_add_facts(r, "small", 1, 1, &c_int));   /* the fact that must survive */
    CU_ASSERT_EQUAL(redfox_run_add_facts(r, "small", 1, 1, &c_big), REDFOX_ERROR_VALUE);
    CU_ASSERT_EQUAL(redfox_run_add_facts(r, "small", 3, 1, &c_bad_ints), REDFOX_ERROR_VALUE);
    CU_ASSERT_PTR_NOT_NULL(strstr(redfox_run_error(r), "row 1"));
    CU_ASSERT_PTR_NOT_NULL(strstr(redfox_run_error(r), "abc"));
    CU_ASSERT_EQUAL(redfox_run_add_facts(r, "small", 1, 1, &c_null), REDFOX_ERROR_INVALID_ARGUMENT);
    redfox_column item_nan[5] = {c_text, c_float, {REDFOX_COLUMN_BOOL, ints}, c_int, c_text};
    CU_ASSERT_EQUAL(redfox_run_add_facts(r, "item", 2, 5, item_nan), REDFOX_ERROR_VALUE);   /* NaN (or NULL text) */
    CU_ASSERT_EQUAL(redfox_run_add_facts(r, "item", 1, 5, item_nan), REDFOX_ERROR_VALUE);   /* "x" is no decimal */
    redfox_column item_null[5] = {c_text, {REDFOX_COLUMN_FLOAT64, (const double[]){1, 2}},
                                  {REDFOX_COLUMN_BOOL, ints}, c_int, {REDFOX_COLUMN_STRING, bad_ints}};
    CU_ASSERT_EQUAL(redfox_run_add_facts(r, "item", 2, 5, item_null), REDFOX_ERROR_VALUE);  /* NULL string */
    CU_ASSERT_PTR_NOT_NULL(strstr(redfox_run_error(r), "NULL"));
    redfox_column item_date[5] = {c_text, c_float, {REDFOX_COLUMN_BOOL, ints}, {REDFOX_COLUMN_STRING, bad_dates},
                                  {REDFOX_COLUMN_STRING, bad_ints}};
    CU_ASSERT_EQUAL(redfox_run_add_facts(r, "item", 1, 5, item_date), REDFOX_ERROR_VALUE);
    redfox_column item_old[5] = {c_text, c_float, {REDFOX_COLUMN_BOOL, ints}, {REDFOX_COLUMN_INT64, ancient},
                                 {REDFOX_COLUMN_STRING, bad_ints}};
    CU_ASSERT_EQUAL(redfox_run_add_facts(r, "item", 1, 5, item_old), REDFOX_ERROR_VALUE);
    redfox_column item_places[5] = {c_text, c_float, {REDFOX_COLUMN_BOOL, ints}, c_int,
                                    {REDFOX_COLUMN_STRING, bad_decimals}};
    CU_ASSERT_EQUAL(redfox_run_add_facts(r, "item", 1, 5, item_places), REDFOX_ERROR_VALUE);
    CU_ASSERT_PTR_NOT_NULL(strstr(redfox_run_error(r), "1.234 has more than 2 decimal places"));
    /* predicates */
    CU_ASSERT_EQUAL(redfox_run_add_facts(r, "nope", 1, 1, &c_int), REDFOX_ERROR_UNKNOWN_PREDICATE);
    CU_ASSERT_EQUAL(redfox_run_add_facts(r, NULL, 1, 1, &c_int), REDFOX_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(redfox_run_add_facts(r, "twice", 1, 1, &c_int), REDFOX_ERROR_STATE);   /* computed by rules */
    /* zero rows is fine */
    OK(redfox_run_add_facts(r, "small", 0, 1, &c_null));
    OK(redfox_run_set_backend(r, REDFOX_BACKEND_CPU));
    OK(redfox_run_execute(r));
    size_t n;
    OK(redfox_run_result_rows(r, "twice", &n));
    CU_ASSERT_EQUAL(n, 1);   /* only the good fact 1 */
    OK(redfox_run_result_rows(r, "copy", &n));
    CU_ASSERT_EQUAL(n, 0);   /* nothing of the refused item facts */
    redfox_run_free(r);
    redfox_program_free(p);
}

/* Handles: NULL, freed, of the other kind; for every call. */
static void test_bad_handles(void)
{
    redfox_program *p;
    redfox_run *r;
    OK(redfox_program_new(&p));
    OK(redfox_program_compile_text(p, NULL, tc_lql));
    OK(redfox_run_new(p, &r));
    redfox_program *freed_p;
    redfox_run *freed_r;
    OK(redfox_program_new(&freed_p));
    OK(redfox_run_new(p, &freed_r));
    redfox_program_free(freed_p);
    redfox_run_free(freed_r);
    redfox_program *bad_programs[] = {NULL, freed_p, (redfox_program *)r};
    redfox_run *bad_runs[] = {NULL, freed_r, (redfox_run *)p};
    const int64_t x[] = {1};
    redfox_column c = {REDFOX_COLUMN_INT64, x};
    for (int i = 0; i < 3; i++) {
        redfox_program *bp = bad_programs[i];
        redfox_run *br = bad_runs[i];
        int n;
        const char *s;
        redfox_type t;
        CU_ASSERT_EQUAL(redfox_program_set_language(bp, REDFOX_LANGUAGE_AUTO), REDFOX_ERROR_INVALID_HANDLE);
        CU_ASSERT_PTR_NOT_NULL(strstr(redfox_last_error(), "redfox_program_set_language"));
        CU_ASSERT_EQUAL(redfox_program_set_fact_dir(bp, "."), REDFOX_ERROR_INVALID_HANDLE);
        CU_ASSERT_EQUAL(redfox_program_set_fuse(bp, 1), REDFOX_ERROR_INVALID_HANDLE);
        CU_ASSERT_EQUAL(redfox_program_add_output(bp, "path"), REDFOX_ERROR_INVALID_HANDLE);
        CU_ASSERT_EQUAL(redfox_program_compile_text(bp, NULL, tc_lql), REDFOX_ERROR_INVALID_HANDLE);
        CU_ASSERT_EQUAL(redfox_program_compile_file(bp, "x.lql"), REDFOX_ERROR_INVALID_HANDLE);
        CU_ASSERT_PTR_NULL(redfox_program_diagnostics(bp));
        CU_ASSERT_PTR_NULL(redfox_program_error(bp));
        CU_ASSERT_EQUAL(redfox_program_predicate_count(bp, &n), REDFOX_ERROR_INVALID_HANDLE);
        CU_ASSERT_EQUAL(redfox_program_predicate_name(bp, 0, &s), REDFOX_ERROR_INVALID_HANDLE);
        CU_ASSERT_EQUAL(redfox_program_arity(bp, "path", &n), REDFOX_ERROR_INVALID_HANDLE);
        CU_ASSERT_EQUAL(redfox_program_column_type(bp, "path", 0, &t, NULL), REDFOX_ERROR_INVALID_HANDLE);
        CU_ASSERT_EQUAL(redfox_program_output_count(bp, &n), REDFOX_ERROR_INVALID_HANDLE);
        CU_ASSERT_EQUAL(redfox_program_output_name(bp, 0, &s), REDFOX_ERROR_INVALID_HANDLE);
        redfox_run *out = (redfox_run *)1;
        CU_ASSERT_EQUAL(redfox_run_new(bp, &out), REDFOX_ERROR_INVALID_HANDLE);
        CU_ASSERT_PTR_NULL(out);
        redfox_program_free(bp);   /* ignored */

        size_t rows;
        int64_t v;
        double d;
        char buf[8];
        redfox_stats stats;
        CU_ASSERT_EQUAL(redfox_run_add_facts(br, "edge", 1, 2, (redfox_column[]){c, c}), REDFOX_ERROR_INVALID_HANDLE);
        CU_ASSERT_EQUAL(redfox_run_clear_facts(br), REDFOX_ERROR_INVALID_HANDLE);
        CU_ASSERT_EQUAL(redfox_run_set_backend(br, REDFOX_BACKEND_CPU), REDFOX_ERROR_INVALID_HANDLE);
        CU_ASSERT_EQUAL(redfox_run_set_threads(br, 1), REDFOX_ERROR_INVALID_HANDLE);
        CU_ASSERT_EQUAL(redfox_run_set_max_iterations(br, 1), REDFOX_ERROR_INVALID_HANDLE);
        CU_ASSERT_EQUAL(redfox_run_execute(br), REDFOX_ERROR_INVALID_HANDLE);
        CU_ASSERT_PTR_NOT_NULL(strstr(redfox_last_error(), "not a live run handle"));
        CU_ASSERT_PTR_NULL(redfox_run_error(br));
        CU_ASSERT_EQUAL(redfox_run_stats(br, &stats), REDFOX_ERROR_INVALID_HANDLE);
        CU_ASSERT_EQUAL(redfox_run_stats_text(br, &s), REDFOX_ERROR_INVALID_HANDLE);
        CU_ASSERT_EQUAL(redfox_run_backend_used(br, &s, NULL), REDFOX_ERROR_INVALID_HANDLE);
        CU_ASSERT_EQUAL(redfox_run_result_rows(br, "path", &rows), REDFOX_ERROR_INVALID_HANDLE);
        CU_ASSERT_EQUAL(redfox_run_get_int64(br, "path", 0, 0, &v), REDFOX_ERROR_INVALID_HANDLE);
        CU_ASSERT_EQUAL(redfox_run_get_float64(br, "path", 0, 0, &d), REDFOX_ERROR_INVALID_HANDLE);
        CU_ASSERT_EQUAL(redfox_run_get_string(br, "path", 0, 0, &s), REDFOX_ERROR_INVALID_HANDLE);
        CU_ASSERT_EQUAL(redfox_run_format_value(br, "path", 0, 0, buf, sizeof buf, NULL),
                        REDFOX_ERROR_INVALID_HANDLE);
        CU_ASSERT_EQUAL(redfox_run_copy_int64(br, "path", 0, &v, 1), REDFOX_ERROR_INVALID_HANDLE);
        CU_ASSERT_EQUAL(redfox_run_copy_float64(br, "path", 0, &d, 1), REDFOX_ERROR_INVALID_HANDLE);
        CU_ASSERT_EQUAL(redfox_run_copy_string(br, "path", 0, &s, 1), REDFOX_ERROR_INVALID_HANDLE);
        redfox_run_free(br);   /* ignored */
    }
    /* NULL out pointers */
    CU_ASSERT_EQUAL(redfox_program_new(NULL), REDFOX_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(redfox_run_new(p, NULL), REDFOX_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(redfox_program_predicate_count(p, NULL), REDFOX_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(redfox_program_arity(p, NULL, &(int){0}), REDFOX_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(redfox_program_column_type(p, "path", 0, NULL, NULL), REDFOX_ERROR_INVALID_ARGUMENT);
    /* The good handles still work. */
    OK(redfox_run_set_backend(r, REDFOX_BACKEND_CPU));
    OK(redfox_run_execute(r));
    redfox_run_free(r);
    redfox_program_free(p);
}

/* Calls out of order, arguments out of range. */
static void test_state_and_arguments(void)
{
    redfox_program *p;
    redfox_run *r;
    OK(redfox_program_new(&p));
    CU_ASSERT_EQUAL(redfox_program_set_language(p, (redfox_language)9), REDFOX_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(redfox_program_compile_text(p, NULL, NULL), REDFOX_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(redfox_program_compile_file(p, NULL), REDFOX_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(redfox_program_add_output(p, NULL), REDFOX_ERROR_INVALID_ARGUMENT);
    OK(redfox_program_set_fact_dir(p, NULL));
    OK(redfox_program_compile_text(p, NULL, tc_lql));
    OK(redfox_run_new(p, &r));
    size_t n;
    int64_t v;
    redfox_stats stats;
    const char *s;
    CU_ASSERT_EQUAL(redfox_run_result_rows(r, "path", &n), REDFOX_ERROR_STATE);
    CU_ASSERT_PTR_NOT_NULL(strstr(redfox_run_error(r), "no results"));
    CU_ASSERT_EQUAL(redfox_run_stats(r, &stats), REDFOX_ERROR_STATE);
    CU_ASSERT_EQUAL(redfox_run_get_int64(r, "path", 0, 0, &v), REDFOX_ERROR_STATE);
    CU_ASSERT_EQUAL(redfox_run_set_backend(r, (redfox_backend)7), REDFOX_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(redfox_run_set_threads(r, -1), REDFOX_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(redfox_run_set_threads(r, 1025), REDFOX_ERROR_INVALID_ARGUMENT);
    OK(redfox_run_set_threads(r, 0));
    const int64_t a[] = {1, 2, 3}, b[] = {2, 3, 1};
    redfox_column cols[2] = {{REDFOX_COLUMN_INT64, a}, {REDFOX_COLUMN_INT64, b}};
    OK(redfox_run_add_facts(r, "edge", 3, 2, cols));
    OK(redfox_run_add_facts(r, "edge", 3, 2, cols));   /* duplicates: a set */
    OK(redfox_run_set_backend(r, REDFOX_BACKEND_CPU));
    OK(redfox_run_execute(r));
    OK(redfox_run_result_rows(r, "path", &n));
    CU_ASSERT_EQUAL(n, 9);   /* a 3-cycle: every pair */
    CU_ASSERT_EQUAL(redfox_run_result_rows(r, "edge", &n), REDFOX_ERROR_UNKNOWN_PREDICATE);   /* not an output */
    CU_ASSERT_EQUAL(redfox_run_result_rows(r, NULL, &n), REDFOX_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(redfox_run_result_rows(r, "path", NULL), REDFOX_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(redfox_run_get_int64(r, "path", 9, 0, &v), REDFOX_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(redfox_run_get_int64(r, "path", 0, 2, &v), REDFOX_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(redfox_run_get_int64(r, "path", 0, -1, &v), REDFOX_ERROR_INVALID_ARGUMENT);
    int64_t small[8];
    CU_ASSERT_EQUAL(redfox_run_copy_int64(r, "path", 0, small, 8), REDFOX_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(redfox_run_error(r), "room"));
    CU_ASSERT_EQUAL(redfox_run_copy_int64(r, "path", 0, NULL, 9), REDFOX_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(redfox_run_format_value(r, "path", 0, 0, NULL, 4, NULL), REDFOX_ERROR_INVALID_ARGUMENT);
    /* stats */
    OK(redfox_run_stats(r, &stats));
    CU_ASSERT(stats.kernels_run > 0);
    CU_ASSERT(stats.loop_iterations >= 2);
    CU_ASSERT(stats.seconds >= 0);
    OK(redfox_run_stats_text(r, &s));
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "redfox: stats (backend cpu"));
    const char *device;
    OK(redfox_run_backend_used(r, &s, &device));
    CU_ASSERT_STRING_EQUAL(s, "cpu");
    CU_ASSERT_PTR_NOT_NULL(strstr(device, "thread"));
    /* --max-iterations: the run fails, and its results go. */
    OK(redfox_run_set_max_iterations(r, 1));
    CU_ASSERT_EQUAL(redfox_run_execute(r), REDFOX_ERROR_RUNTIME);
    CU_ASSERT_PTR_NOT_NULL(strstr(redfox_run_error(r), "fixpoint"));
    CU_ASSERT_EQUAL(redfox_run_result_rows(r, "path", &n), REDFOX_ERROR_STATE);
    OK(redfox_run_set_max_iterations(r, 0));
    OK(redfox_run_execute(r));
    /* Asking for the GPU where there is none. */
    OK(redfox_run_set_backend(r, REDFOX_BACKEND_GPU));
    redfox_status gs = redfox_run_execute(r);
    CU_ASSERT(gs == REDFOX_OK || gs == REDFOX_ERROR_BACKEND);
    if (gs == REDFOX_ERROR_BACKEND)
        CU_ASSERT(strlen(redfox_run_error(r)) > 0);
    OK(redfox_run_set_backend(r, REDFOX_BACKEND_AUTO));
    OK(redfox_run_execute(r));
    OK(redfox_run_result_rows(r, "path", &n));
    CU_ASSERT_EQUAL(n, 9);
    redfox_run_free(r);
    redfox_program_free(p);
}

/* A run-time error of a rule: its message, located like the CLI's. */
static void test_runtime_error(void)
{
    redfox_program *p;
    redfox_run *r;
    OK(redfox_program_new(&p));
    OK(redfox_program_compile_text(p, "div.lql",
                                   "num(x) -> int64(x).\nq(y) -> int64(y).\nq(y) <- num(x), y = 10 / x.\n"));
    OK(redfox_run_new(p, &r));
    const int64_t xs[] = {5, 0};
    redfox_column c = {REDFOX_COLUMN_INT64, xs};
    OK(redfox_run_add_facts(r, "num", 2, 1, &c));
    OK(redfox_run_set_backend(r, REDFOX_BACKEND_CPU));
    CU_ASSERT_EQUAL(redfox_run_execute(r), REDFOX_ERROR_RUNTIME);
    CU_ASSERT_PTR_NOT_NULL(strstr(redfox_run_error(r), "division by zero"));
    CU_ASSERT_PTR_NOT_NULL(strstr(redfox_run_error(r), "div.lql:3"));
    redfox_run_free(r);
    redfox_program_free(p);
}

/* A program freed before its runs: they keep working. */
static void test_program_outlived_by_run(void)
{
    redfox_program *p;
    redfox_run *r1, *r2;
    OK(redfox_program_new(&p));
    OK(redfox_program_compile_text(p, NULL, tc_lql));
    OK(redfox_run_new(p, &r1));
    OK(redfox_run_new(p, &r2));
    redfox_program_free(p);
    int n;
    CU_ASSERT_EQUAL(redfox_program_output_count(p, &n), REDFOX_ERROR_INVALID_HANDLE);
    const int64_t a[] = {1}, b[] = {2};
    redfox_column cols[2] = {{REDFOX_COLUMN_INT64, a}, {REDFOX_COLUMN_INT64, b}};
    OK(redfox_run_add_facts(r1, "edge", 1, 2, cols));
    OK(redfox_run_set_backend(r1, REDFOX_BACKEND_CPU));
    OK(redfox_run_execute(r1));
    redfox_run_free(r1);
    OK(redfox_run_set_backend(r2, REDFOX_BACKEND_CPU));
    OK(redfox_run_execute(r2));
    size_t rows;
    OK(redfox_run_result_rows(r2, "path", &rows));
    CU_ASSERT_EQUAL(rows, 0);
    redfox_run_free(r2);   /* the program's memory goes here (ASan would see a leak) */
}

/* Out of memory in the caller's thread is a status, and the handle lives on. */
static void test_out_of_memory(void)
{
    redfox_program *p;
    redfox_run *r;
    OK(redfox_program_new(&p));
    OK(redfox_program_compile_text(p, NULL, tc_lql));
    OK(redfox_run_new(p, &r));
    const int64_t a[] = {1}, b[] = {2};
    redfox_column cols[2] = {{REDFOX_COLUMN_INT64, a}, {REDFOX_COLUMN_INT64, b}};
    /* Rows whose size in bytes overflows: the allocator is never asked. */
    CU_ASSERT_EQUAL(redfox_run_add_facts(r, "edge", SIZE_MAX / 2, 2, cols), REDFOX_ERROR_OUT_OF_MEMORY);
    CU_ASSERT_PTR_NOT_NULL(strstr(redfox_run_error(r), "out of memory"));
    OK(redfox_run_add_facts(r, "edge", 1, 2, cols));
    OK(redfox_run_set_backend(r, REDFOX_BACKEND_CPU));
    OK(redfox_run_execute(r));
    size_t n;
    OK(redfox_run_result_rows(r, "path", &n));
    CU_ASSERT_EQUAL(n, 1);
    redfox_run_free(r);
    redfox_program_free(p);
}

/* Nothing reaches stdout or stderr, whatever fails. */
static void test_silent(void)
{
    fflush(stdout);
    fflush(stderr);
    FILE *capture = tmpfile();
    int saved_out = dup(1), saved_err = dup(2);
    dup2(fileno(capture), 1);
    dup2(fileno(capture), 2);
    redfox_program *p;
    redfox_run *r;
    redfox_program_new(&p);
    redfox_program_compile_text(p, "bad.lql", "p(x) <- q(x).\n");   /* errors */
    redfox_program_free(p);
    redfox_program_new(&p);
    redfox_program_compile_text(p, "div.lql", "num(x) -> int64(x).\nq(y) -> int64(y).\nq(y) <- num(x), y = 1 / x.\n");
    redfox_run_new(p, &r);
    redfox_run_add_facts(r, "num", 1, 1, (redfox_column[]){{REDFOX_COLUMN_INT64, (const int64_t[]){0}}});
    redfox_run_execute(r);   /* division by zero, on the default backend */
    redfox_run_set_backend(r, REDFOX_BACKEND_GPU);
    redfox_run_execute(r);
    redfox_run_free(r);
    redfox_program_free(p);
    redfox_run_execute(NULL);
    fflush(stdout);
    fflush(stderr);
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    close(saved_out);
    close(saved_err);
    long size = ftell(capture);
    fseek(capture, 0, SEEK_END);
    size = ftell(capture);
    CU_ASSERT_EQUAL(size, 0);
    fclose(capture);
}

/* Two handles in two threads, each checked against the oracle. */
typedef struct thread_job {
    unsigned seed;
    int ok_runs;
    char last_error_seen[64];
} thread_job;

static void *tc_thread(void *arg)
{
    thread_job *job = arg;
    for (int round = 0; round < 4; round++) {
        graph g = random_graph(30 + round, 50, job->seed + (unsigned)round);
        redfox_program *p = NULL;
        redfox_run *r = NULL;
        size_t n = 0;
        bool ok = redfox_program_new(&p) == REDFOX_OK &&
                  redfox_program_compile_text(p, round % 2 ? "tc.dl" : "tc.lql", round % 2 ? tc_dl : tc_lql) ==
                      REDFOX_OK &&
                  redfox_run_new(p, &r) == REDFOX_OK;
        redfox_column cols[2] = {{REDFOX_COLUMN_INT64, g.from}, {REDFOX_COLUMN_INT64, g.to}};
        ok = ok && redfox_run_add_facts(r, "edge", g.nedges, 2, cols) == REDFOX_OK &&
             redfox_run_set_backend(r, REDFOX_BACKEND_CPU) == REDFOX_OK && redfox_run_execute(r) == REDFOX_OK &&
             redfox_run_result_rows(r, "path", &n) == REDFOX_OK;
        unsigned char *reach = closure(&g);
        size_t expect = 0;
        for (int i = 0; i < g.n * g.n; i++)
            expect += reach[i];
        int64_t *xs = malloc((n + 1) * sizeof *xs), *ys = malloc((n + 1) * sizeof *ys);
        ok = ok && n == expect && redfox_run_copy_int64(r, "path", 0, xs, n) == REDFOX_OK &&
             redfox_run_copy_int64(r, "path", 1, ys, n) == REDFOX_OK;
        for (size_t i = 0; ok && i < n; i++)
            ok = reach[xs[i] * g.n + ys[i]];
        /* This thread's last error is its own. */
        redfox_run_result_rows(r, "missing_in_thread", &n);
        snprintf(job->last_error_seen, sizeof job->last_error_seen, "%s", redfox_last_error());
        job->ok_runs += ok;
        free(xs);
        free(ys);
        free(reach);
        redfox_run_free(r);
        redfox_program_free(p);
        graph_free(&g);
    }
    return NULL;
}

static void test_two_threads(void)
{
    thread_job jobs[2] = {{.seed = 11}, {.seed = 23}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL, tc_thread, &jobs[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < 2; i++) {
        CU_ASSERT_EQUAL(jobs[i].ok_runs, 4);
        CU_ASSERT_PTR_NOT_NULL(strstr(jobs[i].last_error_seen, "missing_in_thread"));
    }
}

int main(void)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    CU_pSuite s = CU_add_suite("capi", NULL, NULL);
    CU_add_test(s, "version and status names", test_version_and_names);
    CU_add_test(s, "transitive closure against an oracle", test_tc_against_oracle);
    CU_add_test(s, "program metadata", test_program_metadata);
    CU_add_test(s, "compile errors", test_compile_errors);
    CU_add_test(s, "files and memory inputs", test_compile_file_and_input_files);
    CU_add_test(s, "every type in and out", test_types);
    CU_add_test(s, "bad facts", test_bad_facts);
    CU_add_test(s, "bad handles", test_bad_handles);
    CU_add_test(s, "state and arguments", test_state_and_arguments);
    CU_add_test(s, "runtime error", test_runtime_error);
    CU_add_test(s, "program outlived by its runs", test_program_outlived_by_run);
    CU_add_test(s, "out of memory", test_out_of_memory);
    CU_add_test(s, "silent", test_silent);
    CU_add_test(s, "two handles in two threads", test_two_threads);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failures = CU_get_number_of_failures();
    CU_cleanup_registry();
    return failures ? 1 : 0;
}
