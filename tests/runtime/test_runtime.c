/* The Harmony runtime on hand-built kernel programs: a semi-naive
 * transitive closure (exact tuple set, COPY executed as moves), fact file
 * parsing (exact error messages, CSV quoting), --input overrides, typed
 * output order, and output atomicity. */
#define _POSIX_C_SOURCE 200809L
#include <CUnit/Basic.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime.h"
#include "backend_choice.h"

/* ---- a small builder for rf_hprogram (the test owns the memory) ---- */

/* One plain kernel through the backend boundary (arrays of outputs and
 * inputs since fused kernels). */
static bool run_plain(rf_backend *be, const rf_hprogram *p, const rf_kernel *k, rf_dvar *out, rf_dvar *in0,
                      rf_dvar *in1, rf_kernel_stats *ks, rf_status *st)
{
    rf_dvar *outs[1] = {out}, *ins[2] = {in0, in1};
    return be->run(be, p, k, outs, ins, ks, st) == RF_RUN_DONE;
}

static rf_hprogram *prog_new(void) { return rf_calloc(1, sizeof(rf_hprogram)); }

static int add_var(rf_hprogram *p, const char *name, int arity, rf_type ty, bool sorted, const char *pred)
{
    p->vars = rf_realloc(p->vars, (size_t)(p->nvars + 1) * sizeof *p->vars);
    rf_hvar *v = &p->vars[p->nvars];
    memset(v, 0, sizeof *v);
    v->name = rf_strdup(name);
    v->arity = arity;
    v->types = rf_calloc((size_t)arity + 1, sizeof *v->types);
    for (int c = 0; c < arity; c++)
        v->types[c] = ty;
    v->sorted = sorted;
    v->pred = pred ? rf_strdup(pred) : NULL;
    v->limit = -1;
    return p->nvars++;
}

static int add_block(rf_hprogram *p, rf_term term, int target, int target_else)
{
    p->blocks = rf_realloc(p->blocks, (size_t)(p->nblocks + 1) * sizeof *p->blocks);
    rf_hblock *b = &p->blocks[p->nblocks];
    memset(b, 0, sizeof *b);
    b->label = rf_sprintf("b%d", p->nblocks);
    b->term = term;
    b->target = target;
    b->target_else = target_else;
    return p->nblocks++;
}

static rf_kernel *add_kernel(rf_hprogram *p, int blk, rf_kop op, int out, int in0, int in1, int nkeys)
{
    rf_hblock *b = &p->blocks[blk];
    b->kernels = rf_realloc(b->kernels, (size_t)(b->nkernels + 1) * sizeof *b->kernels);
    rf_kernel *k = &b->kernels[b->nkernels++];
    memset(k, 0, sizeof *k);
    k->op = op;
    k->out = out;
    k->in[0] = in0;
    k->in[1] = in1;
    k->nkeys = nkeys;
    return k;
}

static void set_frees(rf_kernel *k, int n, int v0, int v1)
{
    k->nfree = n;
    k->frees = rf_calloc(2, sizeof *k->frees);
    k->frees[0] = v0;
    k->frees[1] = v1;
}

static void set_proj_cols(rf_kernel *k, int n, const int *cols)
{
    k->nproj = n;
    k->proj = rf_calloc((size_t)n, sizeof *k->proj);
    for (int j = 0; j < n; j++) {
        rf_expr *e = rf_expr_leaf(RF_EX_COL, RF_TYPE_INT64, cols[j]);
        rf_code_from_expr(&k->proj[j], e);
        rf_expr_free(e);
    }
}

static void prog_free(rf_hprogram *p)
{
    for (int v = 0; v < p->nvars; v++) {
        free(p->vars[v].name);
        free(p->vars[v].types);
        free(p->vars[v].pred);
        free(p->vars[v].facts);
        free(p->vars[v].input_path);
        free(p->vars[v].order_cols);
        free(p->vars[v].order_desc);
    }
    for (int b = 0; b < p->nblocks; b++) {
        for (int i = 0; i < p->blocks[b].nkernels; i++) {
            rf_kernel *k = &p->blocks[b].kernels[i];
            for (int j = 0; j < k->nproj; j++)
                rf_code_free(&k->proj[j]);
            free(k->proj);
            rf_code_free(&k->filter);
            for (int j = 0; j < k->naggs; j++)
                rf_code_free(&k->agg_arg[j]);
            free(k->agg_arg);
            free(k->aggfn);
            free(k->frees);
        }
        free(p->blocks[b].kernels);
        free(p->blocks[b].conds);
        free(p->blocks[b].free_entry);
        free(p->blocks[b].label);
    }
    free(p->vars);
    free(p->blocks);
    free(p);
}

/* Semi-naive transitive closure:
 *   b0: edge := LOAD; path := COPY edge; delta := COPY edge
 *   b1: rev := MAP delta (y,x); revs := SORT rev; new := JOIN revs, edge
 *       on 1 key -> (x, z); news := SORT new; nd := DIFF news - path;
 *       t := UNION path, nd; path := COPY t (move); delta := COPY nd (move);
 *       BRANCH_EMPTY(delta) -> b2 else b1
 *   b2: HALT */
enum { V_EDGE, V_PATH, V_DELTA, V_REV, V_REVS, V_NEW, V_NEWS, V_ND, V_T };

static rf_hprogram *tc_program(const rf_word *edges, size_t nedges)
{
    rf_hprogram *p = prog_new();
    add_var(p, "edge", 2, RF_TYPE_INT64, true, "edge");
    add_var(p, "path", 2, RF_TYPE_INT64, true, "path");
    add_var(p, "path.delta", 2, RF_TYPE_INT64, true, "path");
    add_var(p, "rev", 2, RF_TYPE_INT64, false, NULL);
    add_var(p, "revs", 2, RF_TYPE_INT64, true, NULL);
    add_var(p, "new", 2, RF_TYPE_INT64, false, NULL);
    add_var(p, "news", 2, RF_TYPE_INT64, true, NULL);
    add_var(p, "nd", 2, RF_TYPE_INT64, true, NULL);
    add_var(p, "t", 2, RF_TYPE_INT64, true, NULL);
    p->vars[V_PATH].is_output = true;
    p->vars[V_EDGE].nfacts = nedges;
    p->vars[V_EDGE].facts = rf_malloc(2 * nedges * sizeof(rf_word) + 1);
    memcpy(p->vars[V_EDGE].facts, edges, 2 * nedges * sizeof(rf_word));
    int b0 = add_block(p, RF_TERM_FALLTHROUGH, 0, 0);
    int b1 = add_block(p, RF_TERM_BRANCH_EMPTY, 2, 1);
    add_block(p, RF_TERM_HALT, 0, 0);
    add_kernel(p, b0, RF_K_LOAD, V_EDGE, -1, -1, 0);
    add_kernel(p, b0, RF_K_COPY, V_PATH, V_EDGE, -1, 0);
    add_kernel(p, b0, RF_K_COPY, V_DELTA, V_EDGE, -1, 0);
    int swap[2] = {1, 0}, xz[2] = {1, 3};
    rf_kernel *k = add_kernel(p, b1, RF_K_MAP, V_REV, V_DELTA, -1, 0);
    set_proj_cols(k, 2, swap);
    set_frees(k, 1, V_DELTA, -1);
    set_frees(add_kernel(p, b1, RF_K_SORT, V_REVS, V_REV, -1, 0), 1, V_REV, -1);
    k = add_kernel(p, b1, RF_K_JOIN, V_NEW, V_REVS, V_EDGE, 1);
    set_proj_cols(k, 2, xz);
    set_frees(k, 1, V_REVS, -1);
    set_frees(add_kernel(p, b1, RF_K_SORT, V_NEWS, V_NEW, -1, 0), 1, V_NEW, -1);
    set_frees(add_kernel(p, b1, RF_K_DIFF, V_ND, V_NEWS, V_PATH, 0), 1, V_NEWS, -1);
    add_kernel(p, b1, RF_K_UNION, V_T, V_PATH, V_ND, 0);
    set_frees(add_kernel(p, b1, RF_K_COPY, V_PATH, V_T, -1, 0), 1, V_T, -1);
    set_frees(add_kernel(p, b1, RF_K_COPY, V_DELTA, V_ND, -1, 0), 1, V_ND, -1);
    p->blocks[b1].nconds = 1;
    p->blocks[b1].conds = rf_calloc(1, sizeof(int));
    p->blocks[b1].conds[0] = V_DELTA;
    return p;
}

/* Runs p printing to a string; returns the text (malloc'd) or NULL. */
static char *run_to_string(const rf_hprogram *p, rf_run_options *o, rf_run_info *info, rf_status *st)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    rf_backend *be = o->backend ? NULL : rf_backend_cpu_new(2);
    if (be)
        o->backend = be;
    o->out = f;
    bool ok = rf_run_ex(p, o, info, st);
    fclose(f);
    if (be) {
        be->destroy(be);
        o->backend = NULL;
    }
    if (!ok) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* n nodes, m random edges. The big case makes the full relation dense
 * enough (> 64K rows over 2^18 pairs) for the CPU backend to hold it as a
 * bitmap, so that path is checked against the reference too. */
static void check_tc(int th, int N, int E)
{
    {
        rf_word *edges = rf_malloc(2 * (size_t)E * sizeof *edges);
        uint64_t seed = 12345;
        for (int i = 0; i < E; i++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            edges[2 * i] = (seed >> 33) % N;
            edges[2 * i + 1] = (seed >> 45) % N;
        }
        /* Reference: Floyd-Warshall reachability. */
        bool (*reach)[N] = rf_calloc((size_t)N, sizeof *reach);
        for (int i = 0; i < E; i++)
            reach[edges[2 * i]][edges[2 * i + 1]] = true;
        for (int k = 0; k < N; k++)
            for (int i = 0; i < N; i++)
                if (reach[i][k])
                    for (int j = 0; j < N; j++)
                        reach[i][j] |= reach[k][j];
        char *expect = NULL;
        size_t elen = 0, count = 0;
        FILE *ef = open_memstream(&expect, &elen);
        for (int i = 0; i < N; i++)
            for (int j = 0; j < N; j++)
                count += reach[i][j];
        fprintf(ef, "# path (%zu tuples)\n", count);
        for (int i = 0; i < N; i++)
            for (int j = 0; j < N; j++)
                if (reach[i][j])
                    fprintf(ef, "%d\t%d\n", i, j);
        fclose(ef);
        rf_hprogram *p = tc_program(edges, (size_t)E);
        rf_backend *be = rf_backend_cpu_new(th);
        rf_run_options o = {.backend = be};
        rf_run_info info;
        rf_status st;
        rf_status_init(&st);
        char *got = run_to_string(p, &o, &info, &st);
        CU_ASSERT_PTR_NOT_NULL_FATAL(got);
        CU_ASSERT_STRING_EQUAL(got, expect);
        CU_ASSERT_TRUE(count > (size_t)E);
        if (N >= 400) /* big enough for the bitmap representation */
            CU_ASSERT_TRUE(count > 65536);
        /* Two moves per iteration, and the b0 copies (edge stays live) are
         * real copies: the edge relation still joins correctly. */
        CU_ASSERT_TRUE(info.loop_iterations >= 2);
        CU_ASSERT_EQUAL(info.copies_moved, 2 * info.loop_iterations);
        CU_ASSERT_EQUAL(be->bytes_in_use(be), 0);
        CU_ASSERT_TRUE(info.bytes_peak > 0);
        free(got);
        free(expect);
        free(reach);
        free(edges);
        be->destroy(be);
        prog_free(p);
    }
}

/* An output whose string column holds an id no string has (what a device
 * copy overtaking its kernels once made of a relation): the run fails with
 * an internal error naming the relation and the id, and prints no empty
 * text for it; the same program with a known id prints that string. */
static void test_unknown_string_id(void)
{
    rf_word known = rf_str_intern("known", 5);
    for (int bad = 0; bad < 2; bad++) {
        rf_hprogram *p = prog_new();
        int v = add_var(p, "s", 1, RF_TYPE_STRING, true, "s");
        p->vars[v].is_output = true;
        p->vars[v].nfacts = 1;
        p->vars[v].facts = rf_malloc(sizeof(rf_word));
        p->vars[v].facts[0] = bad ? (rf_word)rf_str_count() + 1000 : known;
        int b0 = add_block(p, RF_TERM_FALLTHROUGH, 0, 0);
        add_block(p, RF_TERM_HALT, 0, 0);
        add_kernel(p, b0, RF_K_LOAD, v, -1, -1, 0);
        rf_run_options o = {0};
        rf_run_info info;
        rf_status st;
        rf_status_init(&st);
        char *got = run_to_string(p, &o, &info, &st);
        if (bad) {
            CU_ASSERT_PTR_NULL(got);
            CU_ASSERT_EQUAL(st.code, RF_EXIT_RUNTIME_ERROR);
            CU_ASSERT_PTR_NOT_NULL(strstr(st.message, "internal error: 's'"));
            CU_ASSERT_PTR_NOT_NULL(strstr(st.message, "which no string has"));
        } else {
            CU_ASSERT_PTR_NOT_NULL_FATAL(got);
            CU_ASSERT_STRING_EQUAL(got, "# s (1 tuples)\nknown\n");
        }
        free(got);
        prog_free(p);
    }
}

/* Transitive closure of a chain of n nodes (n - 1 edges, given in a
 * scrambled order) on backend be: n - 1 iterations whose deltas shrink
 * from n - 1 rows to one, so the CPU backend's spare runs (kept with their
 * storage, up to 256 rows of room) are taken and given back with stale
 * rows and capacities of every size, across iterations and across runs on
 * the same backend. The answer must be every pair i < j, exactly. */
static void check_chain_tc(rf_backend *be, int n)
{
    rf_word *edges = rf_malloc(2 * (size_t)n * sizeof *edges);
    for (int i = 0; i + 1 < n; i++) {
        int e = (int)(((size_t)i * 7919) % (size_t)(n - 1)); /* a permutation of the edges (n - 1 prime) */
        edges[2 * i] = (rf_word)e;
        edges[2 * i + 1] = (rf_word)e + 1;
    }
    char *expect = NULL;
    size_t elen = 0;
    FILE *ef = open_memstream(&expect, &elen);
    fprintf(ef, "# path (%zu tuples)\n", (size_t)n * (size_t)(n - 1) / 2);
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            fprintf(ef, "%d\t%d\n", i, j);
    fclose(ef);
    rf_hprogram *p = tc_program(edges, (size_t)n - 1);
    rf_run_options o = {.backend = be};
    rf_run_info info;
    rf_status st;
    rf_status_init(&st);
    char *got = run_to_string(p, &o, &info, &st);
    CU_ASSERT_PTR_NOT_NULL_FATAL(got);
    CU_ASSERT_STRING_EQUAL(got, expect);
    CU_ASSERT_EQUAL(info.loop_iterations, (size_t)n - 1);
    CU_ASSERT_EQUAL(be->bytes_in_use(be), 0);   /* spare runs are not in use */
    free(got);
    free(expect);
    free(edges);
    prog_free(p);
}

static void test_chain_spare_runs(void)
{
    for (int th = 1; th <= 2; th++) {
        rf_backend *be = rf_backend_cpu_new(th);
        check_chain_tc(be, 600);   /* 599 edges (prime): deltas above and below the spare runs' room */
        check_chain_tc(be, 38);    /* 37 edges: the spare runs of the last run reused */
        check_chain_tc(be, 600);
        be->destroy(be);
    }
}

static void test_tc(void)
{
    for (int th = 1; th <= 4; th += 3) {
        check_tc(th, 40, 80);
        check_tc(th, 400, 800);
    }
}

/* ---- fact files ---- */
static const rf_type int2[] = {RF_TYPE_INT64, RF_TYPE_INT64};

static void expect_parse_error(const char *text, rf_file_format fmt, int arity, const rf_type *types,
                               const char *msg)
{
    rf_table t;
    rf_table_init(&t, arity);
    rf_status st;
    rf_status_init(&st);
    CU_ASSERT_FALSE(rf_parse_facts("f.tsv", text, strlen(text), fmt, arity, types, NULL, &t, &st));
    CU_ASSERT_STRING_EQUAL(st.message, msg);
    CU_ASSERT_EQUAL(st.code, RF_EXIT_RUNTIME_ERROR);
    rf_table_free(&t);
}

static void test_parse_errors(void)
{
    expect_parse_error("1\t2\n# c\n\n3\t4\t5\n", RF_FORMAT_TSV, 2, int2,
                       "f.tsv:4: error: expected 2 fields, found 3");
    expect_parse_error("1\t2\n3\tabc\n", RF_FORMAT_TSV, 2, int2,
                       "f.tsv:2: error: field 2: not an integer: 'abc'");
    expect_parse_error("1\n", RF_FORMAT_TSV, 2, int2, "f.tsv:1: error: expected 2 fields, found 1");
    rf_type i32[] = {RF_TYPE_INT32};
    expect_parse_error("5\n3000000000\n", RF_FORMAT_TSV, 1, i32,
                       "f.tsv:2: error: field 1: integer out of range for int32: '3000000000'");
    expect_parse_error("1,\"ab\n", RF_FORMAT_CSV, 2, int2, "f.tsv:1: error: unterminated quoted field");
    /* Unreadable file. */
    rf_table t;
    rf_table_init(&t, 2);
    rf_status st;
    rf_status_init(&st);
    CU_ASSERT_FALSE(rf_read_facts("/nonexistent/x.tsv", RF_FORMAT_TSV, 2, int2, NULL, &t, &st));
    CU_ASSERT_STRING_EQUAL(st.message, "cannot open '/nonexistent/x.tsv': No such file or directory");
    rf_table_free(&t);
}

static void test_parse_ok(void)
{
    rf_type ts[] = {RF_TYPE_STRING, RF_TYPE_INT64, RF_TYPE_FLOAT64};
    const char *csv = "# header comment\n\"a,b\",1,2.5\r\n\"say \"\"hi\"\"\",-7,0\n\nplain,  8 ,1e3\n\"two\nlines\",9,-1\n";
    rf_table t;
    rf_table_init(&t, 3);
    rf_status st;
    rf_status_init(&st);
    CU_ASSERT_TRUE_FATAL(rf_parse_facts("x.csv", csv, strlen(csv), RF_FORMAT_CSV, 3, ts, NULL, &t, &st));
    CU_ASSERT_EQUAL_FATAL(t.nrows, 4);
    CU_ASSERT_STRING_EQUAL(rf_str_get(t.cols[0][0]), "a,b");
    CU_ASSERT_STRING_EQUAL(rf_str_get(t.cols[0][1]), "say \"hi\"");
    CU_ASSERT_STRING_EQUAL(rf_str_get(t.cols[0][2]), "plain");
    CU_ASSERT_STRING_EQUAL(rf_str_get(t.cols[0][3]), "two\nlines");
    CU_ASSERT_EQUAL(rf_word_to_int(t.cols[1][1]), -7);
    CU_ASSERT_EQUAL(rf_word_to_int(t.cols[1][2]), 8);
    CU_ASSERT_EQUAL(rf_word_to_double(t.cols[2][0]), 2.5);
    CU_ASSERT_EQUAL(rf_word_to_double(t.cols[2][2]), 1000.0);
    rf_table_free(&t);
    /* Error line numbers count the lines inside quoted fields. */
    expect_parse_error("\"a\nb\",1\n2,x\n", RF_FORMAT_CSV, 2, (rf_type[]){RF_TYPE_STRING, RF_TYPE_INT64},
                       "f.tsv:3: error: field 2: not an integer: 'x'");
    /* TSV escapes read back what the output writes. */
    const char *tsv = "a\\tb\t1\nc\\\\d\\ne\t2\n";
    rf_type st2[] = {RF_TYPE_STRING, RF_TYPE_INT64};
    rf_table_init(&t, 2);
    CU_ASSERT_TRUE(rf_parse_facts("x.tsv", tsv, strlen(tsv), RF_FORMAT_TSV, 2, st2, NULL, &t, &st));
    CU_ASSERT_EQUAL_FATAL(t.nrows, 2);
    CU_ASSERT_STRING_EQUAL(rf_str_get(t.cols[0][0]), "a\tb");
    CU_ASSERT_STRING_EQUAL(rf_str_get(t.cols[0][1]), "c\\d\ne");
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    CU_ASSERT_TRUE(rf_write_tsv(f, &t, st2));
    fclose(f);
    CU_ASSERT_STRING_EQUAL(out, tsv);
    free(out);
    rf_table_free(&t);
}

/* Typed output order: signed ints, doubles, strings by text. */
static void test_typed_order(void)
{
    rf_type ty[] = {RF_TYPE_STRING, RF_TYPE_INT64, RF_TYPE_FLOAT64};
    rf_word rows[] = {
        rf_str_intern("pear", 4), rf_word_from_int(-3), rf_word_from_double(1.5),
        rf_str_intern("apple", 5), rf_word_from_int(7), rf_word_from_double(-2.0),
        rf_str_intern("pear", 4), rf_word_from_int(-10), rf_word_from_double(0.0),
        rf_str_intern("pear", 4), rf_word_from_int(-3), rf_word_from_double(-1.5),
        rf_str_intern("apple", 5), rf_word_from_int(7), rf_word_from_double(-2.0),
    };
    rf_table t;
    rf_table_from_rows(&t, 3, rows, 5);
    rf_sort_typed(&t, ty);
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    rf_write_tsv(f, &t, ty);
    fclose(f);
    CU_ASSERT_STRING_EQUAL(out, "apple\t7\t-2\npear\t-10\t0\npear\t-3\t-1.5\npear\t-3\t1.5\n");
    free(out);
    rf_table_free(&t);
}

/* ---- whole runs with files ---- */
static char g_dir[256];

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

static int rm_rf(const char *dir)
{
    char *cmd = rf_sprintf("rm -rf '%s'", dir);
    int rc = system(cmd);
    free(cmd);
    return rc;
}

static void test_input_override_and_output_dir(void)
{
    rf_word e[] = {1, 2};
    rf_hprogram *p = tc_program(e, 1);
    char *in = rf_sprintf("%s/edges.csv", g_dir);
    write_file(in, "# edges\n5,6\n6,7\n");
    char *outdir = rf_sprintf("%s/out/sub", g_dir);
    rf_input_override ov = {"edge", in};
    rf_run_options o = {.ninputs = 1, .inputs = &ov, .output_dir = outdir};
    rf_status st;
    rf_status_init(&st);
    char *s = run_to_string(p, &o, NULL, &st);
    CU_ASSERT_PTR_NOT_NULL(s);
    CU_ASSERT_STRING_EQUAL(s ? s : "x", ""); /* nothing on stdout with --output */
    free(s);
    char *pf = rf_sprintf("%s/path.tsv", outdir);
    size_t len;
    char *text = rf_read_file(pf, &len, &st);
    CU_ASSERT_PTR_NOT_NULL(text);
    /* Inline facts ∪ the override file. */
    CU_ASSERT_STRING_EQUAL(text ? text : "", "1\t2\n5\t6\n5\t7\n6\t7\n");
    CU_ASSERT_EQUAL(count_entries(outdir), 1);
    free(text);
    free(pf);
    /* --print of a non-output predicate variable, and unknown names. */
    rf_run_options o2 = {.nprint = 1, .print = (const char *[]){"edge"}};
    rf_status_init(&st);
    s = run_to_string(p, &o2, NULL, &st);
    CU_ASSERT_STRING_EQUAL(s ? s : "", "# edge (1 tuples)\n1\t2\n# path (1 tuples)\n1\t2\n");
    free(s);
    rf_run_options o3 = {.nprint = 1, .print = (const char *[]){"nope"}};
    rf_status_init(&st);
    CU_ASSERT_PTR_NULL(run_to_string(p, &o3, NULL, &st));
    CU_ASSERT_STRING_EQUAL(st.message, "--print: unknown predicate 'nope'");
    rf_input_override bad = {"nope", in};
    rf_run_options o4 = {.ninputs = 1, .inputs = &bad};
    rf_status_init(&st);
    CU_ASSERT_PTR_NULL(run_to_string(p, &o4, NULL, &st));
    CU_ASSERT_STRING_EQUAL(st.message, "--input: unknown predicate 'nope'");
    prog_free(p);
    free(in);
    free(outdir);
}

static void test_output_atomicity(void)
{
    rf_word e[] = {1, 2, 2, 3};
    rf_hprogram *p = tc_program(e, 2);
    p->vars[V_EDGE].is_output = true; /* two outputs: edge, then path */
    char *outdir = rf_sprintf("%s/atomic", g_dir);
    mkdir(outdir, 0777);
    /* Failure 1: a bad input row: the run stops before any output. */
    char *in = rf_sprintf("%s/bad.tsv", g_dir);
    write_file(in, "1\t2\nx\t3\n");
    rf_input_override ov = {"edge", in};
    rf_run_options o = {.ninputs = 1, .inputs = &ov, .output_dir = outdir};
    rf_status st;
    rf_status_init(&st);
    CU_ASSERT_PTR_NULL(run_to_string(p, &o, NULL, &st));
    char *msg = rf_sprintf("%s:2: error: field 1: not an integer: 'x'", in);
    CU_ASSERT_STRING_EQUAL(st.message, msg);
    free(msg);
    CU_ASSERT_EQUAL(count_entries(outdir), 0);
    /* Failure 2: the second output cannot be written (a directory stands
     * at its name): the first must not appear either, nor any temporary. */
    char *block = rf_sprintf("%s/path.tsv", outdir);
    CU_ASSERT_EQUAL(mkdir(block, 0777), 0);
    rf_run_options o2 = {.output_dir = outdir};
    rf_status_init(&st);
    CU_ASSERT_PTR_NULL(run_to_string(p, &o2, NULL, &st));
    msg = rf_sprintf("cannot write '%s': is a directory", block);
    CU_ASSERT_STRING_EQUAL(st.message, msg);
    free(msg);
    CU_ASSERT_EQUAL(count_entries(outdir), 1); /* only the planted directory */
    rmdir(block);
    /* And then it works, writing both. */
    rf_status_init(&st);
    char *s = run_to_string(p, &o2, NULL, &st);
    CU_ASSERT_PTR_NOT_NULL(s);
    free(s);
    CU_ASSERT_EQUAL(count_entries(outdir), 2);
    free(block);
    free(in);
    free(outdir);
    prog_free(p);
}

/* A kernel fault (division by zero in a MAP) stops the run with the
 * message and leaves no output. */
static void test_runtime_fault(void)
{
    rf_word e[] = {1, 0, 2, 3};
    rf_hprogram *p = prog_new();
    add_var(p, "e", 2, RF_TYPE_INT64, true, "e");
    add_var(p, "q", 1, RF_TYPE_INT64, false, "q");
    p->vars[0].nfacts = 2;
    p->vars[0].facts = rf_malloc(sizeof e);
    memcpy(p->vars[0].facts, e, sizeof e);
    p->vars[1].is_output = true;
    int b = add_block(p, RF_TERM_HALT, 0, 0);
    add_kernel(p, b, RF_K_LOAD, 0, -1, -1, 0);
    rf_kernel *k = add_kernel(p, b, RF_K_MAP, 1, 0, -1, 0);
    k->nproj = 1;
    k->proj = rf_calloc(1, sizeof *k->proj);
    rf_expr *x = rf_expr_binary(RF_EX_DIV, RF_TYPE_INT64, rf_expr_leaf(RF_EX_COL, RF_TYPE_INT64, 0),
                                rf_expr_leaf(RF_EX_COL, RF_TYPE_INT64, 1));
    rf_code_from_expr(&k->proj[0], x);
    rf_expr_free(x);
    char *outdir = rf_sprintf("%s/fault", g_dir);
    rf_run_options o = {.output_dir = outdir};
    rf_status st;
    rf_status_init(&st);
    CU_ASSERT_PTR_NULL(run_to_string(p, &o, NULL, &st));
    CU_ASSERT_STRING_EQUAL(st.message, "division by zero");
    CU_ASSERT_EQUAL(count_entries(outdir), -1); /* not even created */
    free(outdir);
    prog_free(p);
}

/* ---- the CPU backend's set representation (LSM runs, shared runs,
 * bitmaps) against a naive model: random sequences of UNION, DIFF,
 * ANTIJOIN, COPY, uploads and semi-naive steps over 8 sorted binary
 * variables; after every step the row count, and often the rows
 * themselves (which merges the runs), must match. Values are
 * base + x * mult for x, y in [0, D): mult 1 lets big sets become
 * bitmaps, a big mult keeps them sparse (runs only). ---- */
#define LSM_D 320
#define LSM_VARS 8

typedef struct lsm_model {
    uint8_t in[LSM_VARS][LSM_D * LSM_D];
    size_t n[LSM_VARS];
} lsm_model;

static uint64_t g_lsm_rng = 88172645463325252ull;
static uint64_t lsm_rand(void)
{
    g_lsm_rng ^= g_lsm_rng << 13;
    g_lsm_rng ^= g_lsm_rng >> 7;
    g_lsm_rng ^= g_lsm_rng << 17;
    return g_lsm_rng;
}

/* A random sorted set of about `rows` rows (within the first `span` x). */
static void lsm_random_set(rf_table *t, uint8_t *bits, size_t rows, rf_word base, rf_word mult)
{
    rf_table_init(t, 2);
    memset(bits, 0, LSM_D * LSM_D);
    int span = 1 + (int)(lsm_rand() % LSM_D), x0 = (int)(lsm_rand() % (LSM_D - span + 1));
    size_t cells = (size_t)span * LSM_D;
    uint64_t thr = rows >= cells ? ~(uint64_t)0 : (uint64_t)((double)rows / (double)cells * 4294967296.0);
    for (int x = x0; x < x0 + span; x++)
        for (int y = 0; y < LSM_D; y++)
            if ((lsm_rand() & 0xffffffffu) < thr) {
                rf_word row[2] = {base + (rf_word)x * mult, base + (rf_word)y * mult};
                rf_table_append_row(t, row);
                bits[x * LSM_D + y] = 1;
            }
}

static void lsm_check_rows(rf_backend *be, rf_dvar *v, const uint8_t *bits, rf_word base, rf_word mult)
{
    rf_table t;
    rf_table_init(&t, 2);
    rf_status st;
    rf_status_init(&st);
    CU_ASSERT_TRUE(be->download(be, v, &t, &st));
    size_t i = 0;
    bool ok = true;
    for (int x = 0; x < LSM_D && ok; x++)
        for (int y = 0; y < LSM_D && ok; y++)
            if (bits[x * LSM_D + y]) {
                ok = i < t.nrows && t.cols[0][i] == base + (rf_word)x * mult &&
                     t.cols[1][i] == base + (rf_word)y * mult;
                i++;
            }
    CU_ASSERT_TRUE(ok);
    CU_ASSERT_EQUAL(i, t.nrows);
    rf_table_free(&t);
}

static size_t lsm_count(const uint8_t *bits)
{
    size_t n = 0;
    for (int i = 0; i < LSM_D * LSM_D; i++)
        n += bits[i];
    return n;
}

static void lsm_run(rf_backend *be, rf_hprogram *p, rf_kernel *k, rf_dvar **dv, rf_kop op, int out,
                    int a, int b, int nkeys)
{
    k->op = op;
    k->out = out;
    k->in[0] = a;
    k->in[1] = b;
    k->nkeys = nkeys;
    rf_kernel_stats ks;
    rf_status st;
    rf_status_init(&st);
    CU_ASSERT_TRUE(run_plain(be, p, k, dv[out], a >= 0 ? dv[a] : NULL, b >= 0 ? dv[b] : NULL, &ks, &st));
}

/* lend_reads: also op 8, a semi-naive union whose full input is read
 * again (off: the sequences of the original test, unchanged). */
static void lsm_sequence(int threads, rf_word base, rf_word mult, int steps, bool lend_reads)
{
    rf_backend *be = rf_backend_cpu_new(threads);
    rf_hprogram *p = prog_new();
    for (int v = 0; v < LSM_VARS; v++)
        add_var(p, "v", 2, RF_TYPE_INT64, true, NULL);
    int blk = add_block(p, RF_TERM_HALT, -1, -1);
    rf_kernel *k = add_kernel(p, blk, RF_K_COPY, 0, -1, -1, 0);
    lsm_model *m = rf_calloc(1, sizeof *m);
    uint8_t *tmp = rf_calloc(LSM_D * LSM_D, 1);
    rf_dvar *dv[LSM_VARS];
    rf_status st;
    rf_status_init(&st);
    for (int v = 0; v < LSM_VARS; v++)
        dv[v] = be->var_new(be, 2, &st);
    for (int step = 0; step < steps; step++) {
        int op = (int)(lsm_rand() % (lend_reads ? 9 : 8));
        int out = (int)(lsm_rand() % LSM_VARS), a = (int)(lsm_rand() % LSM_VARS), b = (int)(lsm_rand() % LSM_VARS);
        while (a == out)
            a = (int)(lsm_rand() % LSM_VARS);
        while (b == out)
            b = (int)(lsm_rand() % LSM_VARS);
        if (op == 0) { /* upload a fresh set: small, medium or big */
            static const size_t sizes[] = {3, 40, 700, 9000, 80000};
            rf_table t;
            lsm_random_set(&t, m->in[out], sizes[lsm_rand() % 5], base, mult);
            CU_ASSERT_TRUE(be->upload(be, dv[out], &t, &st));
            rf_table_free(&t);
        } else if (op == 1 || op == 2) { /* semi-naive step into `out`, via a and b as scratch */
            rf_table t;
            lsm_random_set(&t, tmp, 1 + lsm_rand() % 3000, base, mult);
            CU_ASSERT_TRUE(be->upload(be, dv[a], &t, &st));
            memcpy(m->in[a], tmp, LSM_D * LSM_D);
            rf_table_free(&t);
            if (b == a)
                b = (a + 1) % LSM_VARS == out ? (a + 2) % LSM_VARS : (a + 1) % LSM_VARS;
            lsm_run(be, p, k, dv, RF_K_DIFF, b, a, out, 2);      /* b := a - out */
            for (int i = 0; i < LSM_D * LSM_D; i++)
                m->in[b][i] = m->in[a][i] && !m->in[out][i];
            lsm_run(be, p, k, dv, RF_K_UNION, a, out, b, 2);     /* a := out + b */
            for (int i = 0; i < LSM_D * LSM_D; i++)
                m->in[a][i] = m->in[out][i] || m->in[b][i];
            lsm_run(be, p, k, dv, RF_K_COPY, out, a, -1, 0);     /* out := a */
            memcpy(m->in[out], m->in[a], LSM_D * LSM_D);
        } else if (op == 3) {
            lsm_run(be, p, k, dv, RF_K_UNION, out, a, b, 2);
            for (int i = 0; i < LSM_D * LSM_D; i++)
                m->in[out][i] = m->in[a][i] || m->in[b][i];
        } else if (op == 4) {
            lsm_run(be, p, k, dv, RF_K_DIFF, out, a, b, 2);
            for (int i = 0; i < LSM_D * LSM_D; i++)
                m->in[out][i] = m->in[a][i] && !m->in[b][i];
        } else if (op == 5) {
            lsm_run(be, p, k, dv, RF_K_ANTIJOIN, out, a, b, 1);
            for (int x = 0; x < LSM_D; x++) {
                bool hit = false;
                for (int y = 0; y < LSM_D && !hit; y++)
                    hit = m->in[b][x * LSM_D + y];
                for (int y = 0; y < LSM_D; y++)
                    m->in[out][x * LSM_D + y] = m->in[a][x * LSM_D + y] && !hit;
            }
        } else if (op == 6) {
            lsm_run(be, p, k, dv, RF_K_COPY, out, a, -1, 0);
            memcpy(m->in[out], m->in[a], LSM_D * LSM_D);
        } else if (op == 8) {
            /* A semi-naive union whose full input is read again afterwards:
             * when `out` is a bitmap, the UNION lends it to `a` (new rows
             * set in place, out keeps them as its undo); reading out must
             * give its own rows back, from a copy while a still holds the
             * bitmap, or in place once a has been overwritten. */
            rf_table t;
            lsm_random_set(&t, tmp, 1 + lsm_rand() % 300, base, mult);
            CU_ASSERT_TRUE(be->upload(be, dv[a], &t, &st));
            memcpy(m->in[a], tmp, LSM_D * LSM_D);
            rf_table_free(&t);
            if (b == a)
                b = (a + 1) % LSM_VARS == out ? (a + 2) % LSM_VARS : (a + 1) % LSM_VARS;
            lsm_run(be, p, k, dv, RF_K_DIFF, b, a, out, 2);      /* b := a - out */
            for (int i = 0; i < LSM_D * LSM_D; i++)
                m->in[b][i] = m->in[a][i] && !m->in[out][i];
            lsm_run(be, p, k, dv, RF_K_UNION, a, out, b, 2);     /* a := out + b */
            for (int i = 0; i < LSM_D * LSM_D; i++)
                m->in[a][i] = m->in[out][i] || m->in[b][i];
            if (lsm_rand() % 2) {                                /* a let go of the bitmap first */
                lsm_random_set(&t, tmp, 5, base, mult);
                CU_ASSERT_TRUE(be->upload(be, dv[a], &t, &st));
                memcpy(m->in[a], tmp, LSM_D * LSM_D);
                rf_table_free(&t);
            }
            if (lsm_rand() % 2)                                  /* read through a kernel */
                lsm_run(be, p, k, dv, RF_K_DIFF, b, out, a, 2);  /* b := out - a */
            else
                lsm_run(be, p, k, dv, RF_K_COPY, b, out, -1, 0);
            for (int i = 0; i < LSM_D * LSM_D; i++)
                m->in[b][i] = m->in[out][i] && !(k->op == RF_K_DIFF && m->in[a][i]);
            lsm_check_rows(be, dv[out], m->in[out], base, mult);
            lsm_check_rows(be, dv[a], m->in[a], base, mult);
        } else {
            lsm_check_rows(be, dv[a], m->in[a], base, mult); /* merges a's runs */
        }
        for (int v = 0; v < LSM_VARS; v++) {
            size_t n = 0;
            for (int i = 0; i < LSM_D * LSM_D; i++)
                n += m->in[v][i];
            CU_ASSERT_EQUAL_FATAL(be->var_rows(be, dv[v]), n);
        }
    }
    for (int v = 0; v < LSM_VARS; v++) {
        lsm_check_rows(be, dv[v], m->in[v], base, mult);
        be->var_free(be, dv[v]);
    }
    CU_ASSERT_EQUAL(be->bytes_in_use(be), 0);
    be->destroy(be);
    free(tmp);
    free(m);
    prog_free(p);
}

/* ---- several aggregates in one AGG kernel ---- */

static rf_code col_code(int i, rf_type t)
{
    rf_expr *e = rf_expr_leaf(RF_EX_COL, t, i);
    rf_code c;
    rf_code_from_expr(&c, e);
    rf_expr_free(e);
    return c;
}

static void set_aggs(rf_kernel *k, int n, const rf_aggfn *fns, const rf_code *args)
{
    k->naggs = n;
    k->aggfn = rf_malloc((size_t)n * sizeof *k->aggfn);
    k->agg_arg = rf_calloc((size_t)n, sizeof *k->agg_arg);
    for (int j = 0; j < n; j++) {
        k->aggfn[j] = fns[j];
        if (args)
            k->agg_arg[j] = args[j];
    }
}

/* in(k, v, f) := facts; res := AGG in by k: count(), total(v), avg(v),
 * avg(f), count_distinct(v), min(f), max(v); keyless over an empty
 * relation: counts only -> (0, 0), with avg -> no row. */
static void test_multi_aggregate(void)
{
    rf_hprogram *p = prog_new();
    int in = add_var(p, "in", 3, RF_TYPE_INT64, true, "in");
    int res = add_var(p, "res", 8, RF_TYPE_INT64, true, "res");
    int none = add_var(p, "none", 1, RF_TYPE_INT64, true, "none");
    int zc = add_var(p, "zc", 2, RF_TYPE_INT64, true, "zc");
    int za = add_var(p, "za", 2, RF_TYPE_INT64, true, "za");
    p->vars[in].types[2] = RF_TYPE_FLOAT64;
    rf_type rt[8] = {RF_TYPE_INT64, RF_TYPE_INT64, RF_TYPE_INT64, RF_TYPE_FLOAT64, RF_TYPE_FLOAT64,
                     RF_TYPE_INT64, RF_TYPE_FLOAT64, RF_TYPE_INT64};
    memcpy(p->vars[res].types, rt, sizeof rt);
    p->vars[za].types[1] = RF_TYPE_FLOAT64;
    p->vars[res].is_output = p->vars[zc].is_output = p->vars[za].is_output = true;
    rf_word facts[] = {
        1, 10, rf_word_from_double(0.1), 1, 20, rf_word_from_double(0.2),
        1, 10, rf_word_from_double(0.7), 1, 30, rf_word_from_double(0.3),
        2, (rf_word)-5, rf_word_from_double(-1.5), 3, 7, rf_word_from_double(2.0),
        3, 8, rf_word_from_double(2.0),
    };
    p->vars[in].nfacts = 7;
    p->vars[in].facts = rf_malloc(sizeof facts);
    memcpy(p->vars[in].facts, facts, sizeof facts);
    int b0 = add_block(p, RF_TERM_HALT, 0, 0);
    add_kernel(p, b0, RF_K_LOAD, in, -1, -1, 0);
    add_kernel(p, b0, RF_K_LOAD, none, -1, -1, 0);
    rf_kernel *k = add_kernel(p, b0, RF_K_AGG, res, in, -1, 1);
    rf_aggfn fns[7] = {RF_AGG_COUNT, RF_AGG_TOTAL, RF_AGG_AVG, RF_AGG_AVG, RF_AGG_COUNT_DISTINCT,
                       RF_AGG_MIN, RF_AGG_MAX};
    rf_code args[7] = {{0, NULL}, col_code(1, RF_TYPE_INT64), col_code(1, RF_TYPE_INT64),
                       col_code(2, RF_TYPE_FLOAT64), col_code(1, RF_TYPE_INT64),
                       col_code(2, RF_TYPE_FLOAT64), col_code(1, RF_TYPE_INT64)};
    set_aggs(k, 7, fns, args);
    k = add_kernel(p, b0, RF_K_AGG, zc, none, -1, 0);
    rf_aggfn cfns[2] = {RF_AGG_COUNT, RF_AGG_COUNT_DISTINCT};
    rf_code cargs[2] = {{0, NULL}, col_code(0, RF_TYPE_INT64)};
    set_aggs(k, 2, cfns, cargs);
    k = add_kernel(p, b0, RF_K_AGG, za, none, -1, 0);
    rf_aggfn afns[2] = {RF_AGG_COUNT, RF_AGG_AVG};
    rf_code aargs[2] = {{0, NULL}, col_code(0, RF_TYPE_INT64)};
    set_aggs(k, 2, afns, aargs);
    rf_status st;
    rf_status_init(&st);
    CU_ASSERT_TRUE_FATAL(rf_hir_verify(p, &st));
    rf_run_options o = {0};
    rf_status_init(&st);
    char *got = run_to_string(p, &o, NULL, &st);
    CU_ASSERT_PTR_NOT_NULL_FATAL(got);
    /* Group 1: 4 rows (10 twice: two bindings), values 10, 20, 30. */
    CU_ASSERT_STRING_EQUAL(got, "# res (3 tuples)\n"
                                "1\t4\t70\t17.5\t0.325\t3\t0.1\t30\n"
                                "2\t1\t-5\t-5\t-1.5\t1\t-1.5\t-5\n"
                                "3\t2\t15\t7.5\t2\t2\t2\t8\n"
                                "# zc (1 tuples)\n0\t0\n"
                                "# za (0 tuples)\n");
    free(got);
    prog_free(p);
}

/* ---- @order / @limit ---- */

/* q(name, n, x) with facts; order and limit as given. */
static rf_hprogram *order_program(int norder, const int *cols, const bool *desc, int64_t limit)
{
    rf_hprogram *p = prog_new();
    int q = add_var(p, "q", 3, RF_TYPE_INT64, true, "q");
    p->vars[q].types[0] = RF_TYPE_STRING;
    p->vars[q].types[2] = RF_TYPE_FLOAT64;
    p->vars[q].is_output = true;
    const char *names[] = {"pear", "apple", "pear", "fig", "apple", "Zebra"};
    int64_t ns[] = {1, 2, 1, 2, 1, 5};
    double xs[] = {0.5, 1.0, -0.5, 3.0, 2.0, 0.0};
    p->vars[q].nfacts = 6;
    p->vars[q].facts = rf_malloc(18 * sizeof(rf_word));
    for (int i = 0; i < 6; i++) {
        p->vars[q].facts[3 * i] = rf_str_intern(names[i], strlen(names[i]));
        p->vars[q].facts[3 * i + 1] = (rf_word)ns[i];
        p->vars[q].facts[3 * i + 2] = rf_word_from_double(xs[i]);
    }
    p->vars[q].norder = norder;
    p->vars[q].order_cols = rf_malloc((size_t)(norder + 1) * sizeof(int));
    p->vars[q].order_desc = rf_malloc((size_t)(norder + 1) * sizeof(bool));
    for (int i = 0; i < norder; i++) {
        p->vars[q].order_cols[i] = cols[i];
        p->vars[q].order_desc[i] = desc[i];
    }
    p->vars[q].limit = limit;
    add_kernel(p, add_block(p, RF_TERM_HALT, 0, 0), RF_K_LOAD, q, -1, -1, 0);
    return p;
}

static char *run_order(int norder, const int *cols, const bool *desc, int64_t limit, bool count)
{
    rf_hprogram *p = order_program(norder, cols, desc, limit);
    rf_status st;
    rf_status_init(&st);
    CU_ASSERT_TRUE(rf_hir_verify(p, &st));
    rf_run_options o = {.count_only = count};
    char *got = run_to_string(p, &o, NULL, &st);
    CU_ASSERT_PTR_NOT_NULL(got);
    prog_free(p);
    return got;
}

static void test_ordered_output(void)
{
    /* desc(name): strings by text, 'Z' < 'a'; ties by n, x ascending. */
    char *s = run_order(1, (int[]){0}, (bool[]){true}, -1, false);
    CU_ASSERT_STRING_EQUAL(s, "# q (6 tuples)\npear\t1\t-0.5\npear\t1\t0.5\nfig\t2\t3\n"
                              "apple\t1\t2\napple\t2\t1\nZebra\t5\t0\n");
    free(s);
    /* desc(n), x: the named columns first, then name. */
    s = run_order(2, (int[]){1, 2}, (bool[]){true, false}, -1, false);
    CU_ASSERT_STRING_EQUAL(s, "# q (6 tuples)\nZebra\t5\t0\napple\t2\t1\nfig\t2\t3\n"
                              "pear\t1\t-0.5\npear\t1\t0.5\napple\t1\t2\n");
    free(s);
    /* desc(x) with limit 2; limit 0; limit beyond the rows. */
    s = run_order(1, (int[]){2}, (bool[]){true}, 2, false);
    CU_ASSERT_STRING_EQUAL(s, "# q (2 tuples)\nfig\t2\t3\napple\t1\t2\n");
    free(s);
    s = run_order(1, (int[]){2}, (bool[]){true}, 0, false);
    CU_ASSERT_STRING_EQUAL(s, "# q (0 tuples)\n");
    free(s);
    s = run_order(1, (int[]){2}, (bool[]){true}, 100, false);
    CU_ASSERT_STRING_EQUAL(s, "# q (6 tuples)\nfig\t2\t3\napple\t1\t2\napple\t2\t1\npear\t1\t0.5\n"
                              "Zebra\t5\t0\npear\t1\t-0.5\n");
    free(s);
    /* A limit alone: typed order, cut. */
    s = run_order(0, NULL, NULL, 3, false);
    CU_ASSERT_STRING_EQUAL(s, "# q (3 tuples)\nZebra\t5\t0\napple\t1\t2\napple\t2\t1\n");
    free(s);
    /* --count hashes the rows as written: the order and the limit count. */
    char *h1 = run_order(1, (int[]){0}, (bool[]){true}, 2, true);
    char *h2 = run_order(1, (int[]){0}, (bool[]){false}, 2, true);
    char *h3 = run_order(1, (int[]){0}, (bool[]){true}, 3, true);
    CU_ASSERT_PTR_NOT_NULL(strstr(h1, "# q (2 tuples, hash "));
    CU_ASSERT_STRING_NOT_EQUAL(h1, h2);
    CU_ASSERT_STRING_NOT_EQUAL(h1, h3);
    free(h1);
    free(h2);
    free(h3);
    /* --output writes the same rows. */
    rf_hprogram *p = order_program(1, (int[]){0}, (bool[]){true}, 2);
    char *dir = rf_sprintf("%s/ordered", g_dir);
    rf_run_options o = {.output_dir = dir};
    rf_status st;
    rf_status_init(&st);
    char *out = run_to_string(p, &o, NULL, &st);
    CU_ASSERT_PTR_NOT_NULL(out);
    char *path = rf_sprintf("%s/q.tsv", dir);
    size_t len = 0;
    char *text = rf_read_file(path, &len, &st);
    CU_ASSERT_STRING_EQUAL(text ? text : "", "pear\t1\t-0.5\npear\t1\t0.5\n");
    free(text);
    free(path);
    free(out);
    rm_rf(dir);
    free(dir);
    prog_free(p);
}

/* The CPU backend's lent bitmaps, step by step: a full relation held only
 * as a bitmap (v0) takes a semi-naive `v3 := v0 ∪ (v2 − v0)`; v3 borrows
 * v0's bitmap and v0 keeps the new rows as its undo. Reading v0 again
 * must give exactly its own rows: from a copy while v3 still holds the
 * bitmap (then v3 must be unchanged), in place once v3 let go. */
static void lend_sequence(bool release_first)
{
    rf_backend *be = rf_backend_cpu_new(2);
    rf_hprogram *p = prog_new();
    for (int v = 0; v < 4; v++)
        add_var(p, "v", 2, RF_TYPE_INT64, true, NULL);
    int blk = add_block(p, RF_TERM_HALT, -1, -1);
    rf_kernel *k = add_kernel(p, blk, RF_K_COPY, 0, -1, -1, 0);
    lsm_model *m = rf_calloc(1, sizeof *m);
    rf_dvar *dv[4];
    rf_status st;
    rf_status_init(&st);
    for (int v = 0; v < 4; v++)
        dv[v] = be->var_new(be, 2, &st);
    rf_table t;
    for (int round = 0; round < 3; round++) {
        /* v0 := a big set (bitmap-worthy), then only a bitmap: through a
         * UNION into v3 and back by COPY, v3 overwritten. */
        /* (over the whole square, so that round 0's set is big enough
         * for a bitmap: RF_DENSE_MIN_ROWS) */
        rf_table_init(&t, 2);
        memset(m->in[0], 0, LSM_D * LSM_D);
        for (int x = 0; x < LSM_D; x++)
            for (int y = 0; y < LSM_D; y++)
                if (lsm_rand() % 100 < (round ? 3u : 80u)) {
                    rf_word row[2] = {(rf_word)x, (rf_word)y};
                    rf_table_append_row(&t, row);
                    m->in[0][x * LSM_D + y] = 1;
                }
        CU_ASSERT_TRUE(be->upload(be, dv[0], &t, &st));
        rf_table_free(&t);
        lsm_random_set(&t, m->in[2], 50, 0, 1);
        CU_ASSERT_TRUE(be->upload(be, dv[2], &t, &st));
        rf_table_free(&t);
        for (int step = 0; step < 4; step++) {
            lsm_run(be, p, k, dv, RF_K_DIFF, 1, 2, 0, 2);   /* v1 := v2 − v0 */
            lsm_run(be, p, k, dv, RF_K_UNION, 3, 0, 1, 2);  /* v3 := v0 ∪ v1 */
            for (int i = 0; i < LSM_D * LSM_D; i++) {
                m->in[1][i] = m->in[2][i] && !m->in[0][i];
                m->in[3][i] = m->in[0][i] || m->in[1][i];
            }
            if (step < 2) {   /* v0 := v3 and v3 overwritten (the runtime's move), then the next delta */
                lsm_run(be, p, k, dv, RF_K_COPY, 0, 3, -1, 0);
                memcpy(m->in[0], m->in[3], LSM_D * LSM_D);
                lsm_random_set(&t, m->in[3], 10, 0, 1);
                CU_ASSERT_TRUE(be->upload(be, dv[3], &t, &st));
                rf_table_free(&t);
                lsm_random_set(&t, m->in[2], 200, 0, 1);
                CU_ASSERT_TRUE(be->upload(be, dv[2], &t, &st));
                rf_table_free(&t);
                continue;
            }
            if (release_first) {
                lsm_random_set(&t, m->in[3], 10, 0, 1);
                CU_ASSERT_TRUE(be->upload(be, dv[3], &t, &st));
                rf_table_free(&t);
            }
            for (int v = 0; v < 4; v++)
                CU_ASSERT_EQUAL(be->var_rows(be, dv[v]), lsm_count(m->in[v]));
            lsm_check_rows(be, dv[0], m->in[0], 0, 1);
            lsm_run(be, p, k, dv, RF_K_DIFF, 1, 3, 0, 2);   /* v1 := v3 − v0, v0 read by a kernel */
            for (int i = 0; i < LSM_D * LSM_D; i++)
                m->in[1][i] = m->in[3][i] && !m->in[0][i];
            for (int v = 0; v < 4; v++)
                lsm_check_rows(be, dv[v], m->in[v], 0, 1);
        }
    }
    for (int v = 0; v < 4; v++)
        be->var_free(be, dv[v]);
    be->destroy(be);
    prog_free(p);
    free(m);
}

static void test_cpu_set_representation(void)
{
    lend_sequence(false);
    lend_sequence(true);
    lsm_sequence(1, 0, 1, 250, false);
    lsm_sequence(2, 0, 1, 250, false);
    lsm_sequence(2, 1000, 1000003, 250, false);
    lsm_sequence(3, (rf_word)1 << 63, 7, 150, false);
    lsm_sequence(2, 0, 1, 400, true);   /* dense sets lent and read back (op 8) */
}

/* --backend=auto's choice (backend_choice.h): the threshold from the
 * environment, the decision, and the rows counted before anything loads
 * (inline facts, the input file or its --input override, counting only
 * up to the cap; a last line without a newline counts). */
static void test_auto_backend_choice(void)
{
    CU_ASSERT_EQUAL(rf_auto_cpu_threshold(NULL), RF_AUTO_CPU_ROWS_DEFAULT);
    CU_ASSERT_EQUAL(rf_auto_cpu_threshold(""), RF_AUTO_CPU_ROWS_DEFAULT);
    CU_ASSERT_EQUAL(rf_auto_cpu_threshold("123"), 123);
    CU_ASSERT_EQUAL(rf_auto_cpu_threshold("0"), 0);
    CU_ASSERT_EQUAL(rf_auto_cpu_threshold("12x"), RF_AUTO_CPU_ROWS_DEFAULT);
    CU_ASSERT_EQUAL(rf_auto_cpu_threshold("-5"), RF_AUTO_CPU_ROWS_DEFAULT);
    CU_ASSERT_TRUE(rf_auto_prefers_cpu(7035, 25000));
    CU_ASSERT_FALSE(rf_auto_prefers_cpu(25000, 25000));
    CU_ASSERT_FALSE(rf_auto_prefers_cpu(0, 0));   /* 0: never the CPU by choice */

    char a[512], b[512];
    snprintf(a, sizeof a, "%s/auto_a.tsv", g_dir);
    snprintf(b, sizeof b, "%s/auto_b.tsv", g_dir);
    FILE *f = fopen(a, "w");
    fputs("1\t2\n2\t3\n3\t4", f);   /* 3 rows, the last without a newline */
    fclose(f);
    f = fopen(b, "w");
    for (int i = 0; i < 1000; i++)
        fprintf(f, "%d\t%d\n", i, i + 1);
    fclose(f);
    rf_hprogram *p = prog_new();
    int e = add_var(p, "e", 2, RF_TYPE_INT64, true, "e");
    int g = add_var(p, "g", 1, RF_TYPE_INT64, true, "g");
    add_var(p, "t", 2, RF_TYPE_INT64, true, "e");   /* not loaded: not counted */
    p->vars[e].input_path = rf_strdup(a);
    p->vars[g].nfacts = 2;
    p->vars[g].facts = rf_calloc(2, sizeof(rf_word));
    int blk = add_block(p, RF_TERM_HALT, -1, -1);
    add_kernel(p, blk, RF_K_LOAD, e, -1, -1, 0);
    add_kernel(p, blk, RF_K_LOAD, g, -1, -1, 0);
    CU_ASSERT_EQUAL(rf_input_rows_upto(p, 0, NULL, 1000000), 5);
    rf_input_override over = {"e", b};
    CU_ASSERT_EQUAL(rf_input_rows_upto(p, 1, &over, 1000000), 1002);
    CU_ASSERT_EQUAL(rf_input_rows_upto(p, 1, &over, 100), 100);   /* counting stops at the cap */
    rf_input_override missing = {"e", "/nonexistent/file.tsv"};
    CU_ASSERT_EQUAL(rf_input_rows_upto(p, 1, &missing, 1000000), 2);
    prog_free(p);
    unlink(a);
    unlink(b);
}

int main(void)
{
    snprintf(g_dir, sizeof g_dir, "/tmp/rf_test_runtime.%ld", (long)getpid());
    mkdir(g_dir, 0777);
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    CU_pSuite s = CU_add_suite("runtime", NULL, NULL);
    CU_add_test(s, "transitive closure", test_tc);
    CU_add_test(s, "an output's unknown string id fails the run", test_unknown_string_id);
    CU_add_test(s, "chain closure: tiny deltas, spare runs reused", test_chain_spare_runs);
    CU_add_test(s, "parse errors", test_parse_errors);
    CU_add_test(s, "parse csv/tsv", test_parse_ok);
    CU_add_test(s, "typed output order", test_typed_order);
    CU_add_test(s, "input override, output dir", test_input_override_and_output_dir);
    CU_add_test(s, "output atomicity", test_output_atomicity);
    CU_add_test(s, "kernel fault", test_runtime_fault);
    CU_add_test(s, "cpu backend set representation", test_cpu_set_representation);
    CU_add_test(s, "several aggregates, avg, count_distinct", test_multi_aggregate);
    CU_add_test(s, "@order and @limit", test_ordered_output);
    CU_add_test(s, "--backend=auto: choice from the input rows", test_auto_backend_choice);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures();
    CU_cleanup_registry();
    int rc = rm_rf(g_dir);
    rf_str_reset();
    return failed || rc ? 1 : 0;
}
