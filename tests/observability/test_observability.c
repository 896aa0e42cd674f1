/* Unit tests of common/rf_dot.c (HTML-like label text, the CFG writer's
 * loop clusters, row estimates) and runtime/trace.c's JSON strings. */
#include "rf_dot.h"
#include "trace.h"

#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What was written to the temporary file f, as a malloc'd string; closes
 * f. (A tmpfile, not open_memstream: GCC takes the stream's buffer for a
 * local that escapes.) */
static char *slurp(FILE *f)
{
    long n = ftell(f);
    char *buf = malloc((size_t)n + 1);
    rewind(f);
    size_t got = fread(buf, 1, (size_t)n, f);
    buf[got] = '\0';
    fclose(f);
    return buf;
}

static char *html(const char *s, size_t max)
{
    FILE *f = tmpfile();
    rf_dot_html(f, s, max);
    return slurp(f);
}

static void test_html_escaping(void)
{
    char *t = html("a<b>&\"c\"\td\n", 0);
    CU_ASSERT_STRING_EQUAL(t, "a&lt;b&gt;&amp;&quot;c&quot; d ");
    free(t);
    t = html("caf\xc3\xa9 \xff\xfe x \xe2\x82", 0);   /* valid 2-byte, invalid bytes, cut sequence */
    CU_ASSERT_STRING_EQUAL(t, "caf\xc3\xa9 ?? x ??");
    free(t);
    t = html("\xed\xa0\x80", 0);   /* a surrogate: not UTF-8 */
    CU_ASSERT_STRING_EQUAL(t, "???");
    free(t);
    t = html("abcdef", 3);
    CU_ASSERT_STRING_EQUAL(t, "abc...");
    free(t);
    t = html("\xc3\xa9\xc3\xa9\xc3\xa9", 2);   /* counts characters, not bytes */
    CU_ASSERT_STRING_EQUAL(t, "\xc3\xa9\xc3\xa9...");
    free(t);
    t = html(NULL, 0);
    CU_ASSERT_STRING_EQUAL(t, "");
    free(t);
}

static void node(FILE *out, int b, void *ctx)
{
    (void)ctx;
    fprintf(out, "b%d;\n", b);
}

static char *cfg(int n, const rf_dot_block *blocks)
{
    FILE *f = tmpfile();
    rf_dot_write_cfg(f, "t", n, blocks, node, NULL);
    return slurp(f);
}

/* Blocks 1..4 loop (4 -> 1) around 2..3 (3 -> 2): nested clusters. */
static void test_nested_loops(void)
{
    rf_dot_block b[6] = {
        {"entry", {1, -1}, NULL},  {"outer", {2, -1}, NULL},        {"inner", {3, -1}, NULL},
        {"inner.end", {4, 2}, "empty(d)"}, {"outer.end", {5, 1}, "empty(e)"}, {"halt", {-1, -1}, NULL},
    };
    char *g = cfg(6, b);
    const char *outer = strstr(g, "subgraph cluster_loop_b1 {"), *inner = strstr(g, "subgraph cluster_loop_b2 {");
    CU_ASSERT_PTR_NOT_NULL_FATAL(outer);
    CU_ASSERT_PTR_NOT_NULL_FATAL(inner);
    CU_ASSERT(outer < inner && inner < strstr(g, "b2;") && strstr(g, "b1;") < inner);
    CU_ASSERT(strstr(g, "fixpoint loop outer") && strstr(g, "fixpoint loop inner"));
    /* the inner cluster closes before b4, the outer one after it */
    const char *b4 = strstr(g, "b4;"), *b5 = strstr(g, "b5;");
    CU_ASSERT(b4 && b5 && strstr(inner, "}") < b4 && strstr(b4, "}") < b5);
    CU_ASSERT_PTR_NOT_NULL(strstr(g, "b3 -> b2 [label=<next iteration>, color=\"#c0392b\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(g, "b4 -> b1 [label=<next iteration>, color=\"#c0392b\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(g, "b3 -> b4 [label=<empty(d)>, style=solid]"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g, "b0 -> b1 [style=solid, color=\"#555555\"]"));
    CU_ASSERT_PTR_NULL(strstr(g, "b5 ->"));
    free(g);
}

/* Loops 0..2 and 1..3 overlap without nesting: the first is drawn, the
 * second only as its styled back edge. A jump back is a loop too. */
static void test_overlapping_loops(void)
{
    rf_dot_block b[5] = {
        {"a", {1, -1}, NULL}, {"b", {2, -1}, NULL}, {"c", {3, 0}, "empty(x)"}, {"d", {1, -1}, NULL},
        {"e", {-1, -1}, NULL},
    };
    char *g = cfg(5, b);
    CU_ASSERT_PTR_NOT_NULL(strstr(g, "subgraph cluster_loop_b0 {"));
    CU_ASSERT_PTR_NULL(strstr(g, "subgraph cluster_loop_b1 {"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g, "b3 -> b1 [color=\"#c0392b\""));
    for (int i = 0; i < 5; i++) {   /* every block once */
        char want[8];
        snprintf(want, sizeof want, "b%d;", i);
        const char *at = strstr(g, want);
        CU_ASSERT(at && !strstr(at + 1, want));
    }
    free(g);
}

static void format(rf_rowest e, const char *want)
{
    char buf[64];
    rf_rowest_format(e, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, want);
}

static void test_row_estimates(void)
{
    rf_rowest unknown = {RF_ROWS_UNKNOWN, false, 0};
    format(rf_rowest_exact(16), "rows 16");
    format(rf_rowest_at_most(rf_rowest_exact(16)), "rows <= 16");
    format(unknown, "rows ?");
    format(rf_rowest_sum(rf_rowest_exact(3), unknown), "rows ?");
    format(rf_rowest_sum(rf_rowest_exact(3), rf_rowest_exact(4)), "rows <= 7");
    format(rf_rowest_product(rf_rowest_exact(3), rf_rowest_exact(4)), "rows 12");
    format(rf_rowest_exact(6001215), "rows 6.0M");
    format((rf_rowest){RF_ROWS_AT_MOST, true, 25000}, "rows <= ~25.0K");
    format(rf_rowest_input(0, NULL), "rows ?");   /* only --input could give rows */
    format(rf_rowest_input(3, NULL), "rows <= 3");
    format(rf_rowest_input(0, "/nonexistent/file.tsv"), "rows ?");
    char path[] = "/tmp/rf_rowest_XXXXXX";
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("1\t2\n3\t4\n5\t6", f);   /* a last line without its newline */
    fflush(f);
    format(rf_rowest_input(2, path), "rows <= 5");
    /* 200,000 lines of 8 bytes: extrapolated from the first 64 KiB */
    for (int i = 0; i < 200000; i++)
        fputs("1234567\n", f);
    fclose(f);
    rf_rowest e = rf_rowest_input(0, path);
    CU_ASSERT(e.kind == RF_ROWS_AT_MOST && e.approx && e.rows > 199000 && e.rows < 201000);
    unlink(path);
}

static void test_json_strings(void)
{
    char *s = rf_json_string("a\"b\\c\td\ne\x01 \xc3\xa9 \xff");
    CU_ASSERT_STRING_EQUAL(s, "\"a\\\"b\\\\c\\td\\ne\\u0001 \xc3\xa9 \xef\xbf\xbd\"");
    free(s);
    s = rf_json_string(NULL);
    CU_ASSERT_STRING_EQUAL(s, "\"\"");
    free(s);
    char many[3001];   /* every byte grows: the buffer grows with it */
    memset(many, 0xff, 3000);
    many[3000] = '\0';
    s = rf_json_string(many);
    CU_ASSERT_EQUAL(strlen(s), 2 + 3 * 3000);
    free(s);
    memset(many, '\x02', 3000);
    s = rf_json_string(many);
    CU_ASSERT_EQUAL(strlen(s), 2 + 6 * 3000);
    free(s);
}

int main(void)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 2;
    CU_pSuite s = CU_add_suite("observability", NULL, NULL);
    CU_add_test(s, "label text escaping", test_html_escaping);
    CU_add_test(s, "nested loops as nested clusters", test_nested_loops);
    CU_add_test(s, "overlapping loops", test_overlapping_loops);
    CU_add_test(s, "row estimates", test_row_estimates);
    CU_add_test(s, "JSON strings", test_json_strings);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
    CU_cleanup_registry();
    return failed ? 1 : 0;
}
