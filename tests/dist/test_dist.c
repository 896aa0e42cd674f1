/* The distribution layer's pieces that need no second process: where a
 * row goes (rf_dist_row_rank), and the exchange encoding (rf_dist_pack /
 * rf_dist_unpack) with strings sent as text. The exchanges themselves run
 * under mpirun in run_dist.sh. */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist_backend.h"

static const rf_type two_ints[2] = {RF_TYPE_INT64, RF_TYPE_INT64};

static void fill(rf_table *t, size_t n)
{
    rf_table_init(t, 2);
    for (size_t i = 0; i < n; i++) {
        rf_word row[2] = {i % 17, i * 7919};
        rf_table_append_row(t, row);
    }
}

/* Rows equal on the hashed prefix go to one rank; every rank gets some. */
static void test_row_rank(void)
{
    rf_table t;
    fill(&t, 1000);
    int seen[3] = {0, 0, 0}, rank_of_key[17];
    for (int k = 0; k < 17; k++)
        rank_of_key[k] = -1;
    for (size_t i = 0; i < t.nrows; i++) {
        int r = rf_dist_row_rank(&t, i, 1, two_ints, 3);
        CU_ASSERT(r >= 0 && r < 3);
        int key = (int)t.cols[0][i];
        if (rank_of_key[key] < 0)
            rank_of_key[key] = r;
        CU_ASSERT_EQUAL(rank_of_key[key], r);
        seen[rf_dist_row_rank(&t, i, 2, two_ints, 3)]++;
    }
    CU_ASSERT(seen[0] > 200 && seen[1] > 200 && seen[2] > 200);
    for (size_t i = 0; i < t.nrows; i++)   /* one rank: everything on rank 0 */
        CU_ASSERT_EQUAL(rf_dist_row_rank(&t, i, 2, two_ints, 1), 0);
    rf_table_free(&t);
}

/* Listed columns hash as the prefix of a projection that puts them first
 * (the placement a MAP of a listed move keeps): a row of (a, s, b) hashed
 * on columns 2, 1 goes where the row (b, s) goes hashed on 2, strings by
 * their text; NULL columns are the prefix. */
static void test_row_rank_cols(void)
{
    rf_type wide[3] = {RF_TYPE_INT64, RF_TYPE_STRING, RF_TYPE_INT64}, proj[2] = {RF_TYPE_INT64, RF_TYPE_STRING};
    rf_table t, p;
    rf_table_init(&t, 3);
    rf_table_init(&p, 2);
    char text[32];
    for (int i = 0; i < 500; i++) {
        int n = snprintf(text, sizeof text, "s%d", i % 23);
        rf_word row[3] = {(rf_word)i, rf_str_intern(text, (size_t)n), (rf_word)(i * 31 % 97)};
        rf_table_append_row(&t, row);
        rf_word prow[2] = {row[2], row[1]};
        rf_table_append_row(&p, prow);
    }
    const int cols[2] = {2, 1};
    int seen[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < t.nrows; i++) {
        int r = rf_dist_row_rank_cols(&t, i, 2, cols, wide, 4);
        CU_ASSERT_EQUAL(r, rf_dist_row_rank(&p, i, 2, proj, 4));
        CU_ASSERT_EQUAL(rf_dist_row_rank_cols(&t, i, 1, cols, wide, 4), rf_dist_row_rank(&p, i, 1, proj, 4));
        CU_ASSERT_EQUAL(rf_dist_row_rank_cols(&t, i, 2, NULL, wide, 4), rf_dist_row_rank(&t, i, 2, wide, 4));
        seen[r]++;
    }
    CU_ASSERT(seen[0] > 50 && seen[1] > 50 && seen[2] > 50 && seen[3] > 50);
    rf_table_free(&t);
    rf_table_free(&p);
}

/* A string hashes by its text: the same text under two ids goes alike. */
static void test_string_hash_by_text(void)
{
    rf_type st[1] = {RF_TYPE_STRING};
    rf_table a, b;
    rf_table_init(&a, 1);
    rf_table_init(&b, 1);
    rf_word x = rf_str_intern("alpha", 5);
    rf_table_append_row(&a, &x);
    rf_word y = rf_str_intern("alpha", 5);   /* the same id in one process */
    rf_table_append_row(&b, &y);
    for (int size = 2; size < 9; size++)
        CU_ASSERT_EQUAL(rf_dist_row_rank(&a, 0, 1, st, size), rf_dist_row_rank(&b, 0, 1, st, size));
    rf_table_free(&a);
    rf_table_free(&b);
}

/* pack -> unpack gives each destination its rows, strings and the empty
 * string included, and -1 sends a row to every rank. */
static void test_pack_unpack(void)
{
    rf_type types[3] = {RF_TYPE_INT64, RF_TYPE_STRING, RF_TYPE_STRING};
    rf_table t;
    rf_table_init(&t, 3);
    const char *texts[] = {"", "a", "exactly8", "nine char", "a longer string of text"};
    for (int i = 0; i < 5; i++) {
        rf_word row[3] = {(rf_word)i, rf_str_intern(texts[i], strlen(texts[i])),
                          rf_str_intern(texts[4 - i], strlen(texts[4 - i]))};
        rf_table_append_row(&t, row);
    }
    int dest[5] = {0, 1, -1, 1, 0};
    size_t counts[2];
    uint64_t *buf = NULL;
    size_t total = rf_dist_pack(&t, types, dest, 2, &buf, counts);
    CU_ASSERT_EQUAL(total, counts[0] + counts[1]);
    /* What rank 1 receives: its part only (counts[0] words skipped). */
    size_t got_counts[1] = {counts[1]};
    rf_table got;
    rf_table_init(&got, 3);
    CU_ASSERT_TRUE(rf_dist_unpack(buf + counts[0], got_counts, 1, types, &got));
    CU_ASSERT_EQUAL(got.nrows, 3);   /* rows 1, 2, 3 */
    for (size_t i = 0; i < got.nrows; i++) {
        size_t src = (size_t)got.cols[0][i];
        CU_ASSERT(src >= 1 && src <= 3);
        CU_ASSERT_STRING_EQUAL(rf_str_get(got.cols[1][i]), texts[src]);
        CU_ASSERT_STRING_EQUAL(rf_str_get(got.cols[2][i]), texts[4 - src]);
    }
    /* Both parts as from two senders: all rows, row 2 twice. */
    rf_table all;
    rf_table_init(&all, 3);
    CU_ASSERT_TRUE(rf_dist_unpack(buf, counts, 2, types, &all));
    CU_ASSERT_EQUAL(all.nrows, 6);
    /* Malformed: a count cut short is refused, not read past. */
    size_t short_counts[1] = {counts[1] - 1};
    rf_table bad;
    rf_table_init(&bad, 3);
    CU_ASSERT_FALSE(rf_dist_unpack(buf + counts[0], short_counts, 1, types, &bad));
    size_t zero[1] = {0};
    CU_ASSERT_FALSE(rf_dist_unpack(buf, zero, 1, types, &bad));
    rf_table_free(&bad);
    rf_table_free(&all);
    rf_table_free(&got);
    rf_table_free(&t);
    free(buf);
}

/* Nullary rows travel as row counts alone. */
static void test_nullary(void)
{
    rf_table t;
    rf_table_init(&t, 0);
    rf_table_resize(&t, 1);
    int dest[1] = {-1};
    size_t counts[3];
    uint64_t *buf = NULL;
    rf_dist_pack(&t, NULL, dest, 3, &buf, counts);
    CU_ASSERT(counts[0] == 1 && counts[1] == 1 && counts[2] == 1);
    rf_table got;
    rf_table_init(&got, 0);
    CU_ASSERT_TRUE(rf_dist_unpack(buf, counts, 3, NULL, &got));
    CU_ASSERT_EQUAL(got.nrows, 3);
    rf_table_free(&got);
    rf_table_free(&t);
    free(buf);
}

int main(void)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    CU_pSuite s = CU_add_suite("dist", NULL, NULL);
    CU_add_test(s, "row rank", test_row_rank);
    CU_add_test(s, "row rank of listed columns", test_row_rank_cols);
    CU_add_test(s, "strings hash by text", test_string_hash_by_text);
    CU_add_test(s, "pack and unpack", test_pack_unpack);
    CU_add_test(s, "nullary rows", test_nullary);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures();
    CU_cleanup_registry();
    rf_str_reset();
    return failed ? 1 : 0;
}
