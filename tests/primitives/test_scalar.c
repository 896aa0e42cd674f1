/* The scalar operators of compute code (common/rf_scalar_ops.h and
 * rf_scalar_string), case by case, through both CPU evaluators: the tree
 * evaluator (rf_expr_eval) and the vectorised one (rf_code_eval_batch, over
 * a batch where the case's row sits among others, so the selection vectors
 * and the fast loops are exercised). Each case gives the exact result word
 * or the exact fault message. */
#include <CUnit/Basic.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rf_prims.h"
#include "rf_scalar_ops.h"

/* ---- building expressions ---- */
static rf_type D(int s) { return rf_type_decimal(s); }
static rf_expr *cst(rf_type t, int64_t v) { return rf_expr_const(t, rf_word_from_int(v)); }
static rf_expr *i32(int64_t v) { return cst(RF_TYPE_INT32, v); }
static rf_expr *i64(int64_t v) { return cst(RF_TYPE_INT64, v); }
static rf_expr *dec(int s, int64_t v) { return cst(D(s), v); }
static rf_expr *f64(double d) { return rf_expr_const(RF_TYPE_FLOAT64, rf_word_from_double(d)); }
static rf_expr *str(const char *s) { return rf_expr_const(RF_TYPE_STRING, rf_str_intern(s, strlen(s))); }
static rf_expr *col(rf_type t, int i) { return rf_expr_leaf(RF_EX_COL, t, i); }

static int64_t days(const char *text)
{
    int64_t d = 0;
    const char *why;
    CU_ASSERT_TRUE_FATAL(rf_date_parse(text, strlen(text), &d, &why));
    return d;
}
static rf_expr *date(const char *text) { return cst(RF_TYPE_DATE, days(text)); }

static rf_expr *bin(rf_exop op, rf_type t, rf_expr *a, rf_expr *b) { return rf_expr_binary(op, t, a, b); }
static rf_expr *un(rf_exop op, rf_type t, rf_expr *a) { return rf_expr_unary(op, t, a); }
static rf_expr *cast(rf_type t, rf_expr *a) { return rf_expr_unary(RF_EX_CAST, t, a); }
static rf_expr *cmp(rf_exop op, rf_expr *a, rf_expr *b) { return rf_expr_binary(op, RF_TYPE_BOOL, a, b); }
static rf_expr *fn3(rf_exop op, rf_type t, rf_expr *a, rf_expr *b, rf_expr *c)
{
    return rf_expr_ternary(op, t, a, b, c);
}

/* ---- running a case ---- */
#define NCOLS 4
#define BATCH_ROWS 2500 /* more than two evaluator batches */
static rf_word g_row[NCOLS];  /* the case's row (columns of the expression) */
static rf_word g_fill[NCOLS]; /* the other rows of the batch: must not fault */
static int g_failures_reported;

/* Evaluates e on g_row with both evaluators. want_msg NULL: expects the
 * word `want`; else the fault message. The vectorised evaluator gets a
 * batch of BATCH_ROWS rows: g_fill everywhere except row `at`. */
static void run_case(const char *what, rf_expr *e, rf_word want, const char *want_msg)
{
    rf_status st;
    rf_status_init(&st);
    rf_word got = 0;
    bool ok = rf_expr_eval(e, g_row, &got, &st);
    bool pass = want_msg ? (!ok && strcmp(st.message, want_msg) == 0) : (ok && got == want);
    if (!pass && g_failures_reported++ < 40)
        fprintf(stderr, "\n  %s (tree): %s '%s' word %" PRId64 ", expected %s '%s' word %" PRId64, what,
                ok ? "ok" : "fault", ok ? "" : st.message, (int64_t)got, want_msg ? "fault" : "ok",
                want_msg ? want_msg : "", (int64_t)want);
    CU_ASSERT_TRUE(pass);

    size_t at = 1500;
    rf_table t;
    rf_table_init(&t, NCOLS);
    rf_table_resize(&t, BATCH_ROWS);
    for (int c = 0; c < NCOLS; c++)
        for (size_t r = 0; r < BATCH_ROWS; r++)
            t.cols[c][r] = r == at ? g_row[c] : g_fill[c];
    rf_code code;
    rf_code_from_expr(&code, e);
    CU_ASSERT_TRUE(rf_code_check(&code, NCOLS) > 0);
    rf_word *dst = rf_malloc(BATCH_ROWS * sizeof *dst);
    rf_status_init(&st);
    ok = rf_code_eval_batch(&code, t.cols, 0, BATCH_ROWS, dst, &st);
    pass = want_msg ? (!ok && strcmp(st.message, want_msg) == 0) : (ok && dst[at] == want);
    if (!pass && g_failures_reported++ < 40)
        fprintf(stderr, "\n  %s (vectorised): %s '%s' word %" PRId64 ", expected %s '%s'", what, ok ? "ok" : "fault",
                ok ? "" : st.message, ok ? (int64_t)dst[at] : 0, want_msg ? "fault" : "ok", want_msg ? want_msg : "");
    CU_ASSERT_TRUE(pass);
    free(dst);
    rf_code_free(&code);
    rf_table_free(&t);
    rf_expr_free(e);
}

static void ok_int(const char *what, rf_expr *e, int64_t want) { run_case(what, e, rf_word_from_int(want), NULL); }
static void ok_word(const char *what, rf_expr *e, rf_word want) { run_case(what, e, want, NULL); }
static void ok_str(const char *what, rf_expr *e, const char *want)
{
    run_case(what, e, rf_str_intern(want, strlen(want)), NULL);
}
static void ok_date(const char *what, rf_expr *e, const char *want) { ok_int(what, e, days(want)); }
static void fails(const char *what, rf_expr *e, const char *msg) { run_case(what, e, 0, msg); }

static void set_row(rf_word a, rf_word b, rf_word c, rf_word d)
{
    g_row[0] = a;
    g_row[1] = b;
    g_row[2] = c;
    g_row[3] = d;
}

/* ---- checked integer arithmetic ---- */
static void test_int_overflow(void)
{
    rf_type I = RF_TYPE_INT32, L = RF_TYPE_INT64;
    /* columns: fill rows hold small values that never fault */
    g_fill[0] = 3;
    g_fill[1] = 2;
    g_fill[2] = 1;
    g_fill[3] = 1;
    set_row(rf_word_from_int(INT32_MAX), 1, rf_word_from_int(INT32_MIN), rf_word_from_int(-1));
    fails("int32 max + 1", bin(RF_EX_ADD, I, col(I, 0), col(I, 1)),
          "integer overflow: 2147483647 + 1 does not fit int32");
    ok_int("int32 max + 0", bin(RF_EX_ADD, I, col(I, 0), i32(0)), INT32_MAX);
    fails("int32 min - 1", bin(RF_EX_SUB, I, col(I, 2), col(I, 1)),
          "integer overflow: -2147483648 - 1 does not fit int32");
    ok_int("int32 min + max", bin(RF_EX_ADD, I, col(I, 2), col(I, 0)), -1);
    fails("int32 min / -1", bin(RF_EX_DIV, I, col(I, 2), col(I, 3)),
          "integer overflow: -2147483648 / -1 does not fit int32");
    ok_int("int32 min % -1", bin(RF_EX_MOD, I, col(I, 2), col(I, 3)), 0);
    ok_int("int32 max / -1", bin(RF_EX_DIV, I, col(I, 0), col(I, 3)), -INT32_MAX);
    fails("-int32 min", un(RF_EX_NEG, I, col(I, 2)), "integer overflow: -(-2147483648) does not fit int32");
    ok_int("-int32 max", un(RF_EX_NEG, I, col(I, 0)), -INT32_MAX);
    fails("3 * 1000000000", bin(RF_EX_MUL, I, i32(3), i32(1000000000)),
          "integer overflow: 3 * 1000000000 does not fit int32");
    fails("46341 * 46341", bin(RF_EX_MUL, I, i32(46341), i32(46341)),
          "integer overflow: 46341 * 46341 does not fit int32");
    ok_int("46340 * 46340", bin(RF_EX_MUL, I, i32(46340), i32(46340)), 2147395600);
    fails("65536 * -32769", bin(RF_EX_MUL, I, i32(65536), i32(-32769)),
          "integer overflow: 65536 * -32769 does not fit int32");
    ok_int("65536 * -32768", bin(RF_EX_MUL, I, i32(65536), i32(-32768)), INT32_MIN);
    fails("int32 / 0", bin(RF_EX_DIV, I, i32(5), i32(0)), "division by zero");
    ok_int("-7 / 2", bin(RF_EX_DIV, I, i32(-7), i32(2)), -3);
    ok_int("-7 % 2", bin(RF_EX_MOD, I, i32(-7), i32(2)), -1);

    set_row(rf_word_from_int(INT64_MAX), 1, rf_word_from_int(INT64_MIN), rf_word_from_int(-1));
    fails("int64 max + 1", bin(RF_EX_ADD, L, col(L, 0), col(L, 1)),
          "integer overflow: 9223372036854775807 + 1 does not fit int64");
    fails("int64 min - 1", bin(RF_EX_SUB, L, col(L, 2), col(L, 1)),
          "integer overflow: -9223372036854775808 - 1 does not fit int64");
    fails("int64 1 - min", bin(RF_EX_SUB, L, col(L, 1), col(L, 2)),
          "integer overflow: 1 - -9223372036854775808 does not fit int64");
    ok_int("int64 -1 - min", bin(RF_EX_SUB, L, col(L, 3), col(L, 2)), INT64_MAX);
    fails("int64 min / -1", bin(RF_EX_DIV, L, col(L, 2), col(L, 3)),
          "integer overflow: -9223372036854775808 / -1 does not fit int64");
    ok_int("int64 min % -1", bin(RF_EX_MOD, L, col(L, 2), col(L, 3)), 0);
    fails("-int64 min", un(RF_EX_NEG, L, col(L, 2)),
          "integer overflow: -(-9223372036854775808) does not fit int64");
    fails("int64 min * -1", bin(RF_EX_MUL, L, col(L, 2), col(L, 3)),
          "integer overflow: -9223372036854775808 * -1 does not fit int64");
    ok_int("int64 min * 1", bin(RF_EX_MUL, L, col(L, 2), col(L, 1)), INT64_MIN);
    ok_int("int64 max * -1", bin(RF_EX_MUL, L, col(L, 0), col(L, 3)), -INT64_MAX);
    fails("3037000500^2", bin(RF_EX_MUL, L, i64(3037000500), i64(3037000500)),
          "integer overflow: 3037000500 * 3037000500 does not fit int64");
    ok_int("3037000499^2", bin(RF_EX_MUL, L, i64(3037000499), i64(3037000499)), 9223372030926249001);
    ok_int("-2^32 * 2^31", bin(RF_EX_MUL, L, i64(-4294967296), i64(2147483648)), INT64_MIN);
    fails("2^32 * 2^31", bin(RF_EX_MUL, L, i64(4294967296), i64(2147483648)),
          "integer overflow: 4294967296 * 2147483648 does not fit int64");
    fails("2^32 * 2^32", bin(RF_EX_MUL, L, i64(4294967296), i64(4294967296)),
          "integer overflow: 4294967296 * 4294967296 does not fit int64");
    fails("-2^32 * -2^32", bin(RF_EX_MUL, L, i64(-4294967296), i64(-4294967296)),
          "integer overflow: -4294967296 * -4294967296 does not fit int64");
    fails("max * max", bin(RF_EX_MUL, L, col(L, 0), col(L, 0)),
          "integer overflow: 9223372036854775807 * 9223372036854775807 does not fit int64");
    ok_int("0 * min", bin(RF_EX_MUL, L, i64(0), col(L, 2)), 0);
    /* The edges of the 32 x 32 -> 64 fast path (both operands within
     * int32) and just past it. */
    ok_int("int32 min^2", bin(RF_EX_MUL, L, i64(INT32_MIN), i64(INT32_MIN)), (int64_t)1 << 62);
    ok_int("int32 min * max", bin(RF_EX_MUL, L, i64(INT32_MIN), i64(INT32_MAX)), (int64_t)INT32_MIN * INT32_MAX);
    ok_int("int32 max * -1", bin(RF_EX_MUL, L, i64(INT32_MAX), i64(-1)), -(int64_t)INT32_MAX);
    ok_int("(int32 max + 1) * int32 min", bin(RF_EX_MUL, L, i64((int64_t)INT32_MAX + 1), i64(INT32_MIN)),
           -((int64_t)1 << 62));
    ok_int("(int32 min - 1) * 2^31", bin(RF_EX_MUL, L, i64((int64_t)INT32_MIN - 1), i64((int64_t)1 << 31)),
           -(((int64_t)1 << 62) + ((int64_t)1 << 31)));
    /* Faults inside a larger expression are reported too. */
    fails("(max + 1) > 0", cmp(RF_EX_GT, bin(RF_EX_ADD, L, col(L, 0), col(L, 1)), i64(0)),
          "integer overflow: 9223372036854775807 + 1 does not fit int64");
    /* Widening first (what the front end does for int32 op int64) fits. */
    set_row(rf_word_from_int(INT32_MAX), 1, 0, 0);
    ok_int("int64(int32 max) + 1", bin(RF_EX_ADD, L, cast(L, col(I, 0)), i64(1)), (int64_t)INT32_MAX + 1);
    fails("int32(2^31)", cast(I, i64(2147483648)), "value 2147483648 out of range for int32");
}

/* The fast loops of the vectorised evaluator (int64 + and -) flag an
 * overflow anywhere in a batch; the scalar path then names the first row. */
static void test_vector_overflow(void)
{
    rf_table t;
    rf_table_init(&t, 2);
    rf_table_resize(&t, 3000);
    for (size_t r = 0; r < 3000; r++) {
        t.cols[0][r] = rf_word_from_int((int64_t)r);
        t.cols[1][r] = rf_word_from_int(INT64_MAX - 5000);
    }
    t.cols[0][2100] = rf_word_from_int(6000);
    t.cols[0][2900] = rf_word_from_int(7000);
    rf_expr *e = bin(RF_EX_ADD, RF_TYPE_INT64, col(RF_TYPE_INT64, 0), col(RF_TYPE_INT64, 1));
    rf_code c;
    rf_code_from_expr(&c, e);
    rf_word *dst = rf_malloc(3000 * sizeof *dst);
    rf_status st;
    rf_status_init(&st);
    CU_ASSERT_FALSE(rf_code_eval_batch(&c, t.cols, 0, 3000, dst, &st));
    CU_ASSERT_STRING_EQUAL(st.message, "integer overflow: 6000 + 9223372036854770807 does not fit int64");
    rf_status_init(&st);
    CU_ASSERT_TRUE(rf_code_eval_batch(&c, t.cols, 0, 2100, dst, &st));
    CU_ASSERT_EQUAL(dst[2099], rf_word_from_int(INT64_MAX - 5000 + 2099));
    rf_code_free(&c);
    rf_expr_free(e);
    /* - likewise */
    e = bin(RF_EX_SUB, RF_TYPE_INT64, un(RF_EX_NEG, RF_TYPE_INT64, col(RF_TYPE_INT64, 1)), col(RF_TYPE_INT64, 0));
    rf_code_from_expr(&c, e);
    rf_status_init(&st);
    CU_ASSERT_FALSE(rf_code_eval_batch(&c, t.cols, 0, 3000, dst, &st));
    CU_ASSERT_STRING_EQUAL(st.message, "integer overflow: -9223372036854770807 - 6000 does not fit int64");
    rf_code_free(&c);
    rf_expr_free(e);
    free(dst);
    rf_table_free(&t);
}

/* ---- decimals ---- */
static void test_decimal_arith(void)
{
    for (int c = 0; c < NCOLS; c++)
        g_fill[c] = 100;
    set_row(150, 225, rf_word_from_int(INT64_MAX), 1);
    ok_int("1.50 + 2.25", bin(RF_EX_ADD, D(2), col(D(2), 0), col(D(2), 1)), 375);
    ok_int("1.50 - 2.25", bin(RF_EX_SUB, D(2), col(D(2), 0), col(D(2), 1)), -75);
    ok_int("1.50 * 2.25 = 3.3750", bin(RF_EX_MUL, D(4), col(D(2), 0), col(D(2), 1)), 33750);
    ok_int("-1.50", un(RF_EX_NEG, D(2), col(D(2), 0)), -150);
    fails("max + 0.01", bin(RF_EX_ADD, D(2), col(D(2), 2), col(D(2), 3)),
          "decimal overflow: 92233720368547758.07 + 0.01 does not fit decimal[2]");
    fails("-max - 0.01 (INT64_MIN is no decimal)",
          bin(RF_EX_SUB, D(2), un(RF_EX_NEG, D(2), col(D(2), 2)), col(D(2), 3)),
          "decimal overflow: -92233720368547758.07 - 0.01 does not fit decimal[2]");
    fails("big * big", bin(RF_EX_MUL, D(4), col(D(2), 2), dec(2, 200)),
          "decimal overflow: 92233720368547758.07 * 2.00 does not fit decimal[4]");
    fails("decimal[9] * decimal[9]", bin(RF_EX_MUL, D(18), dec(9, 5000000000), dec(9, 2000000000)),
          "decimal overflow: 5.000000000 * 2.000000000 does not fit decimal[18]");
    ok_int("decimal[9] * decimal[9] fits", bin(RF_EX_MUL, D(18), dec(9, 3000000000), dec(9, 3000000000)),
           9000000000000000000);
    ok_int("-0.05 * 3 (int as decimal[0])", bin(RF_EX_MUL, D(2), dec(2, -5), cast(D(0), i32(3))), -15);
    /* comparisons: signed, same scale */
    ok_int("-0.50 < 0.05", cmp(RF_EX_LT, dec(2, -50), dec(2, 5)), 1);
    ok_int("1.50 >= 1.50", cmp(RF_EX_GE, col(D(2), 0), dec(2, 150)), 1);
}

static void test_decimal_casts(void)
{
    rf_type L = RF_TYPE_INT64, I = RF_TYPE_INT32, F = RF_TYPE_FLOAT64;
    ok_int("int64 5 -> decimal[2]", cast(D(2), i64(5)), 500);
    ok_int("int32 -5 -> decimal[18]", cast(D(18), i32(-5)), -5000000000000000000);
    fails("int32 -10 -> decimal[18]", cast(D(18), i32(-10)), "value -10 out of range for decimal[18]");
    fails("int64 max -> decimal[2]", cast(D(2), i64(INT64_MAX)), "value 9223372036854775807 out of range for decimal[2]");
    fails("int64 min -> decimal[0]", cast(D(0), i64(INT64_MIN)), "value -9223372036854775808 out of range for decimal[0]");
    ok_int("int64 max -> decimal[0]", cast(D(0), i64(INT64_MAX)), INT64_MAX);
    ok_int("1.50 -> decimal[4]", cast(D(4), dec(2, 150)), 15000);
    fails("huge decimal[2] -> decimal[4]", cast(D(4), dec(2, INT64_MAX / 10)),
          "value 9223372036854775.80 out of range for decimal[4]");
    /* narrowing rounds half away from zero */
    ok_int("1.2345 -> 1.23", cast(D(2), dec(4, 12345)), 123);
    ok_int("1.2350 -> 1.24", cast(D(2), dec(4, 12350)), 124);
    ok_int("-1.2350 -> -1.24", cast(D(2), dec(4, -12350)), -124);
    ok_int("1.2349 -> 1.23", cast(D(2), dec(4, 12349)), 123);
    ok_int("-1.2349 -> -1.23", cast(D(2), dec(4, -12349)), -123);
    ok_int("-0.0050 -> -0.01", cast(D(2), dec(4, -50)), -1);
    ok_int("0.0049 -> 0.00", cast(D(2), dec(4, 49)), 0);
    ok_int("0.5 -> 1", cast(D(0), dec(1, 5)), 1);
    ok_int("-0.5 -> -1", cast(D(0), dec(1, -5)), -1);
    ok_int("max decimal[18] -> decimal[0]", cast(D(0), dec(18, INT64_MAX)), 9);
    ok_int("-max decimal[18] -> decimal[0]", cast(D(0), dec(18, -INT64_MAX)), -9);
    /* decimal -> int truncates */
    ok_int("3.99 -> int64", cast(L, dec(2, 399)), 3);
    ok_int("-3.99 -> int64", cast(L, dec(2, -399)), -3);
    ok_int("-3.99 -> int32", cast(I, dec(2, -399)), -3);
    fails("30000000000.00 -> int32", cast(I, dec(2, 3000000000000)), "value 30000000000.00 out of range for int32");
    ok_int("max decimal[0] -> int64", cast(L, dec(0, INT64_MAX)), INT64_MAX);
    /* decimal <-> float64 */
    ok_word("1.25 -> float64", cast(F, dec(2, 125)), rf_word_from_double(1.25));
    ok_word("0.10 -> float64", cast(F, dec(2, 10)), rf_word_from_double(0.1));
    ok_word("-7 decimal[0] -> float64", cast(F, dec(0, -7)), rf_word_from_double(-7.0));
    ok_word("-0.00 -> float64 is +0", cast(F, dec(2, 0)), rf_word_from_double(0.0));
    ok_int("0.125 -> 0.13", cast(D(2), f64(0.125)), 13);
    ok_int("-0.125 -> -0.13", cast(D(2), f64(-0.125)), -13);
    ok_int("1.005 (below, as a double) -> 1.00", cast(D(2), f64(1.005)), 100);
    ok_int("2.5 -> 3", cast(D(0), f64(2.5)), 3);
    ok_int("-2.5 -> -3", cast(D(0), f64(-2.5)), -3);
    ok_int("1e18 -> decimal[0]", cast(D(0), f64(1e18)), 1000000000000000000);
    fails("1e30 -> decimal[2]", cast(D(2), f64(1e30)), "value 1e+30 out of range for decimal[2]");
    fails("9.3e18 -> decimal[0]", cast(D(0), f64(9.3e18)), "value 9.3e+18 out of range for decimal[0]");
    fails("-2^63 -> decimal[0]", cast(D(0), f64(-9223372036854775808.0)),
          "value -9.223372036854776e+18 out of range for decimal[0]");
}

/* ---- dates ---- */
static void test_date_arith(void)
{
    rf_type T = RF_TYPE_DATE, L = RF_TYPE_INT64, I = RF_TYPE_INT32;
    for (int c = 0; c < NCOLS; c++)
        g_fill[c] = rf_word_from_int(days("1995-06-17"));
    set_row(rf_word_from_int(days("9999-12-31")), rf_word_from_int(days("0001-01-01")), 1, 0);
    ok_date("2000-02-28 + 1", bin(RF_EX_ADD, T, date("2000-02-28"), i32(1)), "2000-02-29");
    ok_date("1900-02-28 + 1", bin(RF_EX_ADD, T, date("1900-02-28"), i32(1)), "1900-03-01");
    ok_date("1 + 1999-12-31", bin(RF_EX_ADD, T, i64(1), date("1999-12-31")), "2000-01-01");
    ok_date("1998-12-01 - 90", bin(RF_EX_SUB, T, date("1998-12-01"), i32(90)), "1998-09-02");
    ok_int("1995-03-15 - 1995-01-01", bin(RF_EX_SUB, L, date("1995-03-15"), date("1995-01-01")), 73);
    ok_int("0001-01-01 - 9999-12-31", bin(RF_EX_SUB, L, col(T, 1), col(T, 0)),
           RF_DATE_MIN_DAYS - RF_DATE_MAX_DAYS);
    fails("9999-12-31 + 1", bin(RF_EX_ADD, T, col(T, 0), col(I, 2)), "date out of range: 9999-12-31 + 1");
    fails("1 + 9999-12-31", bin(RF_EX_ADD, T, col(I, 2), col(T, 0)), "date out of range: 1 + 9999-12-31");
    fails("0001-01-01 - 1", bin(RF_EX_SUB, T, col(T, 1), col(I, 2)), "date out of range: 0001-01-01 - 1");
    fails("date + int64 max", bin(RF_EX_ADD, T, date("9999-12-31"), i64(INT64_MAX)),
          "date out of range: 9999-12-31 + 9223372036854775807");
    fails("date - int64 min", bin(RF_EX_SUB, T, date("0001-01-01"), i64(INT64_MIN)),
          "date out of range: 0001-01-01 - -9223372036854775808");
    ok_date("9999-12-31 + 0", bin(RF_EX_ADD, T, col(T, 0), col(I, 3)), "9999-12-31");
    ok_int("date < date", cmp(RF_EX_LT, col(T, 1), col(T, 0)), 1);
    ok_int("1969-12-31 < 1970-01-01", cmp(RF_EX_LT, date("1969-12-31"), date("1970-01-01")), 1);
    ok_int("date = date", cmp(RF_EX_EQ, date("1995-03-15"), bin(RF_EX_ADD, T, date("1995-03-14"), i32(1))), 1);
}

/* ---- calendar functions ---- */
static void test_date_functions(void)
{
    rf_type T = RF_TYPE_DATE, I = RF_TYPE_INT32;
    for (int c = 0; c < NCOLS; c++)
        g_fill[c] = rf_word_from_int(days("1995-06-17"));
    set_row(rf_word_from_int(days("2000-02-29")), rf_word_from_int(days("1995-01-31")), 1, 0);
    ok_int("year", un(RF_EX_YEAR, I, col(T, 0)), 2000);
    ok_int("month", un(RF_EX_MONTH, I, col(T, 0)), 2);
    ok_int("day", un(RF_EX_DAY, I, col(T, 0)), 29);
    ok_int("year 0001", un(RF_EX_YEAR, I, date("0001-01-01")), 1);
    ok_int("day 9999-12-31", un(RF_EX_DAY, I, date("9999-12-31")), 31);
    ok_int("year 1969-12-31", un(RF_EX_YEAR, I, date("1969-12-31")), 1969);
    ok_date("1995-01-31 + 1 month", bin(RF_EX_ADD_MONTHS, T, col(T, 1), i32(1)), "1995-02-28");
    ok_date("1996-01-31 + 1 month", bin(RF_EX_ADD_MONTHS, T, date("1996-01-31"), i32(1)), "1996-02-29");
    ok_date("1995-03-31 - 1 month", bin(RF_EX_ADD_MONTHS, T, date("1995-03-31"), i32(-1)), "1995-02-28");
    ok_date("1995-01-31 + 3 months", bin(RF_EX_ADD_MONTHS, T, col(T, 1), i32(3)), "1995-04-30");
    ok_date("1995-01-15 - 13 months", bin(RF_EX_ADD_MONTHS, T, date("1995-01-15"), i64(-13)), "1993-12-15");
    ok_date("1995-12-15 + 1 month", bin(RF_EX_ADD_MONTHS, T, date("1995-12-15"), i32(1)), "1996-01-15");
    ok_date("+ 0 months", bin(RF_EX_ADD_MONTHS, T, col(T, 0), i32(0)), "2000-02-29");
    ok_date("2000-02-29 + 1 year", bin(RF_EX_ADD_YEARS, T, col(T, 0), i32(1)), "2001-02-28");
    ok_date("2000-02-29 + 4 years", bin(RF_EX_ADD_YEARS, T, col(T, 0), i32(4)), "2004-02-29");
    ok_date("2000-02-29 - 100 years", bin(RF_EX_ADD_YEARS, T, col(T, 0), i32(-100)), "1900-02-28");
    ok_date("0001-01-01 + 9998 years", bin(RF_EX_ADD_YEARS, T, date("0001-01-01"), i32(9998)), "9999-01-01");
    ok_date("9999-12-31 - 119987 months", bin(RF_EX_ADD_MONTHS, T, date("9999-12-31"), i32(-119987)),
            "0001-01-31");
    fails("9999-12-01 + 1 month", bin(RF_EX_ADD_MONTHS, T, date("9999-12-01"), i32(1)),
          "date out of range: add_months(9999-12-01, 1)");
    fails("0001-01-15 - 1 month", bin(RF_EX_ADD_MONTHS, T, date("0001-01-15"), i32(-1)),
          "date out of range: add_months(0001-01-15, -1)");
    fails("add_years 10000", bin(RF_EX_ADD_YEARS, T, date("0001-01-15"), i32(9999)),
          "date out of range: add_years(0001-01-15, 9999)");
    fails("add_months int64 max", bin(RF_EX_ADD_MONTHS, T, date("1995-01-31"), i64(INT64_MAX)),
          "date out of range: add_months(1995-01-31, 9223372036854775807)");
    fails("add_years int64 min", bin(RF_EX_ADD_YEARS, T, date("1995-01-31"), i64(INT64_MIN)),
          "date out of range: add_years(1995-01-31, -9223372036854775808)");
}

/* ---- string functions ---- */
static rf_word sid(const char *s) { return rf_str_intern(s, strlen(s)); }

static void test_string_functions(void)
{
    rf_type S = RF_TYPE_STRING, L = RF_TYPE_INT64, B = RF_TYPE_BOOL;
    g_fill[0] = sid("fill");
    g_fill[1] = sid("%");
    g_fill[2] = 1;
    g_fill[3] = 1;
    set_row(sid("hello"), sid("h_l%"), 0, 3);
#define SUB(start, len) fn3(RF_EX_SUBSTR, S, col(S, 0), i64(start), i64(len))
    ok_str("substr 1 3", SUB(1, 3), "hel");
    ok_str("substr 2 100", SUB(2, 100), "ello");
    ok_str("substr 0 3", SUB(0, 3), "he");
    ok_str("substr -1 3", SUB(-1, 3), "h");
    ok_str("substr -5 3", SUB(-5, 3), "");
    ok_str("substr 5 1", SUB(5, 1), "o");
    ok_str("substr 6 1 (past the end)", SUB(6, 1), "");
    ok_str("substr 100 5", SUB(100, 5), "");
    ok_str("substr 1 0", SUB(1, 0), "");
    ok_str("substr 2 max", SUB(2, INT64_MAX), "ello");
    ok_str("substr max max", SUB(INT64_MAX, INT64_MAX), "");
    ok_str("substr min max", SUB(INT64_MIN, INT64_MAX), "");
    ok_str("substr int32 args", fn3(RF_EX_SUBSTR, S, col(S, 0), col(RF_TYPE_INT32, 2), col(RF_TYPE_INT32, 3)), "he");
    fails("substr negative length", SUB(2, -1), "substr: negative length -1");
#undef SUB
    ok_int("strlen", un(RF_EX_STRLEN, L, col(S, 0)), 5);
    ok_int("strlen empty", un(RF_EX_STRLEN, L, str("")), 0);
    ok_int("strlen bytes", un(RF_EX_STRLEN, L, str("caf\xc3\xa9")), 5);
    ok_str("concat", bin(RF_EX_CONCAT, S, col(S, 0), str(", world")), "hello, world");
    ok_str("concat empty", bin(RF_EX_CONCAT, S, str(""), str("")), "");
    ok_str("concat col col", bin(RF_EX_CONCAT, S, col(S, 1), col(S, 0)), "h_l%hello");
    static const struct { const char *s, *p; int want; } likes[] = {
        {"abc", "a%", 1}, {"abc", "%c", 1}, {"abc", "%b%", 1}, {"abc", "a_c", 1}, {"abc", "a_", 0},
        {"abc", "_", 0}, {"abc", "___", 1}, {"ab", "___", 0}, {"", "", 1}, {"a", "", 0}, {"", "%", 1},
        {"", "%%", 1}, {"abc", "%%", 1}, {"abc", "%%c", 1}, {"abc", "ABC", 0}, {"a%c", "a%c", 1},
        {"aXbXc", "%X%X%", 1}, {"aXb", "%X%X%", 0}, {"mississippi", "%iss%pi", 1}, {"mississippi", "m%iss_p%i", 1},
        {"special packages requests", "%special%requests%", 1}, {"PROMO BRUSHED", "PROMO%", 1},
        {"LARGE PROMO", "PROMO%", 0}, {"abcd", "a%d%", 1}, {"ab", "%_%_%", 1}, {"a", "%_%_%", 0},
        {"hello", "h_l%", 1},
    };
    for (size_t i = 0; i < sizeof likes / sizeof *likes; i++) {
        char what[96];
        snprintf(what, sizeof what, "'%s' like '%s'", likes[i].s, likes[i].p);
        ok_int(what, bin(RF_EX_LIKE, B, str(likes[i].s), str(likes[i].p)), likes[i].want);
    }
    ok_int("like with a column pattern", bin(RF_EX_LIKE, B, col(S, 0), col(S, 1)), 1);
    ok_int("starts_with", bin(RF_EX_STARTS_WITH, B, col(S, 0), str("he")), 1);
    ok_int("starts_with empty", bin(RF_EX_STARTS_WITH, B, col(S, 0), str("")), 1);
    ok_int("starts_with longer", bin(RF_EX_STARTS_WITH, B, str("ab"), str("abc")), 0);
    ok_int("starts_with no", bin(RF_EX_STARTS_WITH, B, col(S, 0), str("el")), 0);
    ok_int("ends_with", bin(RF_EX_ENDS_WITH, B, col(S, 0), str("llo")), 1);
    ok_int("ends_with whole", bin(RF_EX_ENDS_WITH, B, col(S, 0), str("hello")), 1);
    ok_int("ends_with longer", bin(RF_EX_ENDS_WITH, B, str("lo"), str("llo")), 0);
    ok_int("ends_with no", bin(RF_EX_ENDS_WITH, B, col(S, 0), str("hell")), 0);
    ok_int("contains", bin(RF_EX_CONTAINS, B, col(S, 0), str("ll")), 1);
    ok_int("contains empty", bin(RF_EX_CONTAINS, B, str(""), str("")), 1);
    ok_int("contains no", bin(RF_EX_CONTAINS, B, col(S, 0), str("lo!")), 0);
    ok_int("contains late", bin(RF_EX_CONTAINS, B, str("aaab"), str("ab")), 1);
    /* strings order by text */
    ok_int("'ab' < 'b'", cmp(RF_EX_LT, str("ab"), str("b")), 1);
}

/* ---- if(c, x, y): only the branch taken is evaluated ---- */
static void test_if(void)
{
    rf_type L = RF_TYPE_INT64, B = RF_TYPE_BOOL;
    g_fill[0] = 7;
    g_fill[1] = 2;
    g_fill[2] = 0;
    g_fill[3] = 0;
    set_row(7, 0, 0, 0);
    /* if(y != 0, x / y, 0) with y = 0: no division by zero */
    rf_expr *safe = fn3(RF_EX_IF, L, cmp(RF_EX_NE, col(L, 1), i64(0)), bin(RF_EX_DIV, L, col(L, 0), col(L, 1)), i64(-1));
    ok_int("if(y != 0, x / y, -1), y = 0", rf_expr_clone(safe), -1);
    set_row(7, 2, 0, 0);
    ok_int("if(y != 0, x / y, -1), y = 2", rf_expr_clone(safe), 3);
    /* the else branch faults only where taken */
    rf_expr *els = fn3(RF_EX_IF, L, cmp(RF_EX_EQ, col(L, 1), i64(0)), i64(-1), bin(RF_EX_DIV, L, col(L, 0), col(L, 1)));
    ok_int("if(y = 0, -1, x / y), y = 2", rf_expr_clone(els), 3);
    set_row(7, 0, 0, 0);
    ok_int("if(y = 0, -1, x / y), y = 0", rf_expr_clone(els), -1);
    /* overflow in the branch not taken is not an error either */
    set_row(rf_word_from_int(INT64_MAX), 0, 0, 0);
    ok_int("if(x < 100, x + 1, x)", fn3(RF_EX_IF, L, cmp(RF_EX_LT, col(L, 0), i64(100)),
                                     bin(RF_EX_ADD, L, col(L, 0), i64(1)), col(L, 0)), INT64_MAX);
    fails("if(true, x + 1, 0) faults", fn3(RF_EX_IF, L, rf_expr_const(B, 1), bin(RF_EX_ADD, L, col(L, 0), i64(1)), i64(0)),
          "integer overflow: 9223372036854775807 + 1 does not fit int64");
    /* nested, and as a filter operand */
    set_row(5, 0, 3, 0);
    ok_int("nested if", fn3(RF_EX_IF, L, cmp(RF_EX_GT, col(L, 0), i64(4)),
                            fn3(RF_EX_IF, L, cmp(RF_EX_EQ, col(L, 1), i64(0)), i64(100), bin(RF_EX_DIV, L, i64(1), col(L, 1))),
                            bin(RF_EX_DIV, L, i64(1), col(L, 3))), 100);
    ok_int("if inside &&", bin(RF_EX_AND, B, cmp(RF_EX_NE, col(L, 2), i64(0)),
                               cmp(RF_EX_GT, fn3(RF_EX_IF, L, cmp(RF_EX_NE, col(L, 1), i64(0)),
                                                 bin(RF_EX_DIV, L, col(L, 0), col(L, 1)), col(L, 2)), i64(2))), 1);
    ok_str("if on strings", fn3(RF_EX_IF, RF_TYPE_STRING, cmp(RF_EX_LT, col(L, 0), i64(0)), str("neg"), str("pos")), "pos");
    rf_expr_free(safe);
    rf_expr_free(els);

    /* A batch mixing both branches, through the vectorised evaluator:
     * every row gets its own branch, no fault. */
    rf_table t;
    rf_table_init(&t, 2);
    rf_table_resize(&t, 3000);
    for (size_t r = 0; r < 3000; r++) {
        t.cols[0][r] = rf_word_from_int((int64_t)r * 3);
        t.cols[1][r] = rf_word_from_int((int64_t)(r % 5) - 2); /* zero every fifth row */
    }
    rf_expr *e = fn3(RF_EX_IF, L, cmp(RF_EX_NE, col(L, 1), i64(0)), bin(RF_EX_DIV, L, col(L, 0), col(L, 1)),
                     bin(RF_EX_MOD, L, col(L, 0), i64(7)));
    rf_code c;
    rf_code_from_expr(&c, e);
    rf_word *dst = rf_malloc(3000 * sizeof *dst);
    rf_status st;
    rf_status_init(&st);
    CU_ASSERT_TRUE(rf_code_eval_batch(&c, t.cols, 0, 3000, dst, &st));
    size_t bad = 0;
    for (size_t r = 0; r < 3000; r++) {
        int64_t x = (int64_t)r * 3, y = (int64_t)(r % 5) - 2;
        if ((int64_t)dst[r] != (y != 0 ? x / y : x % 7))
            bad++;
    }
    CU_ASSERT_EQUAL(bad, 0);
    /* and through MAP, as a filter and a projection */
    rf_expr *f = cmp(RF_EX_GE, rf_expr_clone(e), i64(0));
    rf_code fc;
    rf_code_from_expr(&fc, f);
    rf_table out;
    rf_status_init(&st);
    CU_ASSERT_TRUE(rf_prim_map(&t, &fc, 1, &c, &out, &st));
    size_t want = 0;
    for (size_t r = 0; r < 3000; r++) {
        int64_t x = (int64_t)r * 3, y = (int64_t)(r % 5) - 2;
        want += (y != 0 ? x / y : x % 7) >= 0;
    }
    CU_ASSERT_EQUAL(out.nrows, want);
    rf_table_free(&out);
    rf_code_free(&fc);
    rf_expr_free(f);
    free(dst);
    rf_code_free(&c);
    rf_expr_free(e);
    rf_table_free(&t);
}

/* Postfix code of arity-3 operators passes rf_code_check; malformed code
 * (an IF short of an operand) does not. */
static void test_code_check(void)
{
    rf_expr *e = fn3(RF_EX_IF, RF_TYPE_STRING, cmp(RF_EX_LT, col(RF_TYPE_INT64, 0), i64(0)),
                     fn3(RF_EX_SUBSTR, RF_TYPE_STRING, col(RF_TYPE_STRING, 1), i64(1), i64(2)), str("x"));
    rf_code c;
    rf_code_from_expr(&c, e);
    CU_ASSERT_EQUAL(c.n, 9);
    CU_ASSERT_EQUAL(rf_code_check(&c, 2), 4);
    CU_ASSERT_EQUAL(rf_code_check(&c, 1), -1); /* column 1 out of range */
    rf_instr ins[3] = {c.ins[0], c.ins[1], c.ins[8]};
    rf_code bad = {3, ins};  /* a < 0 ... if: two values for three operands */
    ins[1] = c.ins[2];
    CU_ASSERT_EQUAL(rf_code_check(&bad, 2), -1);
    rf_code_free(&c);
    rf_expr_free(e);
}

/* The definition of LIKE, by recursion (exponential, fine for short
 * strings): the oracle for rf_like_match's fast paths. */
static bool like_oracle(const char *s, size_t n, const char *p, size_t m)
{
    if (m == 0)
        return n == 0;
    if (p[0] == '%')
        return like_oracle(s, n, p + 1, m - 1) || (n > 0 && like_oracle(s + 1, n - 1, p, m));
    return n > 0 && (p[0] == '_' || p[0] == s[0]) && like_oracle(s + 1, n - 1, p + 1, m - 1);
}

static void test_like_random(void)
{
    uint64_t x = 12345;
    int wrong = 0;
    for (int round = 0; round < 200000; round++) {
        char s[12], p[10];
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        size_t n = (size_t)(x >> 60) % 12, m = (size_t)(x >> 56) % 10;
        for (size_t i = 0; i < n; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            s[i] = "abc"[(x >> 33) % 3];
        }
        for (size_t i = 0; i < m; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            p[i] = "abc%%_"[(x >> 33) % (round % 2 ? 5 : 6)];  /* odd rounds: no '_' */
        }
        if (rf_like_match(s, n, p, m) != like_oracle(s, n, p, m) && wrong++ < 5)
            fprintf(stderr, "\nlike('%.*s', '%.*s') wrong\n", (int)n, s, (int)m, p);
    }
    CU_ASSERT_EQUAL(wrong, 0);
}

/* LIKE by dynamic programming over (prefix of s, prefix of p): the oracle
 * for long strings, where the recursion above is too slow. */
static bool like_table(const char *s, size_t n, const char *p, size_t m)
{
    bool *row = calloc(m + 1, sizeof *row), *next = calloc(m + 1, sizeof *next);
    row[0] = true;   /* row[j]: s[0, i) matches p[0, j) */
    for (size_t j = 1; j <= m; j++)
        row[j] = row[j - 1] && p[j - 1] == '%';
    for (size_t i = 1; i <= n; i++) {
        next[0] = false;
        for (size_t j = 1; j <= m; j++)
            next[j] = p[j - 1] == '%' ? next[j - 1] || row[j]
                                      : row[j - 1] && (p[j - 1] == '_' || p[j - 1] == s[i - 1]);
        bool *t = row;
        row = next;
        next = t;
    }
    bool r = row[m];
    free(row);
    free(next);
    return r;
}

/* Strings of up to 100 bytes against patterns of words between '%'s (the
 * word search's 16-place steps, their last partial step and the words
 * that straddle them), and contains() against strstr. */
static void test_like_long(void)
{
    uint64_t x = 777;
    int wrong = 0;
    for (int round = 0; round < 100000; round++) {
        char s[101], p[24];
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        size_t n = (size_t)(x >> 40) % 101, m = 0;
        const char *abc = round % 3 ? "ab" : "abcd";
        for (size_t i = 0; i < n; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            s[i] = abc[(x >> 33) % strlen(abc)];
        }
        int words = (int)((x >> 20) % 4);
        if ((x >> 25) & 1)
            p[m++] = '%';
        for (int k = 0; k < words; k++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            size_t len = 1 + (size_t)(x >> 35) % 5;
            for (size_t i = 0; i < len; i++) {
                x = x * 6364136223846793005ull + 1442695040888963407ull;
                p[m++] = round % 7 == 0 && i == 1 ? '_' : abc[(x >> 33) % strlen(abc)];
            }
            if (k + 1 < words || ((x >> 26) & 1))
                p[m++] = '%';
        }
        if (rf_like_match(s, n, p, m) != like_table(s, n, p, m) && wrong++ < 5)
            fprintf(stderr, "\nlike('%.*s', '%.*s') wrong\n", (int)n, s, (int)m, p);
        /* contains(s, w): w a word of the pattern's letters */
        char sz[102], wz[8];
        size_t wn = 1 + (size_t)(x >> 45) % 6;
        for (size_t i = 0; i < wn; i++)
            wz[i] = abc[(x >> (3 * i + 7)) % strlen(abc)];
        wz[wn] = 0;
        memcpy(sz, s, n);
        sz[n] = 0;
        rf_word sid = rf_str_intern(s, n), wid = rf_str_intern(wz, wn), got = 0;
        rf_status st;
        rf_status_init(&st);
        CU_ASSERT_TRUE(rf_scalar_string(RF_EX_CONTAINS, sid, wid, 0, &got, &st));
        if ((got != 0) != (strstr(sz, wz) != NULL) && wrong++ < 5)
            fprintf(stderr, "\ncontains('%s', '%s') wrong\n", sz, wz);
    }
    CU_ASSERT_EQUAL(wrong, 0);
}

static bool naive_contains(const char *s, size_t n, const char *w, size_t m)
{
    for (size_t i = 0; i + m <= n; i++)
        if (memcmp(s + i, w, m) == 0)
            return true;
    return false;
}

static uint64_t next_rand(uint64_t *x)
{
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return *x >> 33;
}

/* A random pattern of up to three words over abc, '%'s between them and
 * maybe at either end; '_' in some. */
static size_t random_pattern(uint64_t *x, const char *abc, bool underscores, char *p)
{
    size_t m = 0;
    int words = (int)(next_rand(x) % 4);
    if (next_rand(x) & 1)
        p[m++] = '%';
    for (int k = 0; k < words; k++) {
        size_t len = 1 + next_rand(x) % 4;
        for (size_t i = 0; i < len; i++)
            p[m++] = underscores && i == 1 ? '_' : abc[next_rand(x) % strlen(abc)];
        if (k + 1 < words || (next_rand(x) & 1))
            p[m++] = '%';
    }
    return m;
}

/* Texts back to back (rf_like_run_many searches a run of them as one):
 * short strings of few letters, so that a pattern's first word often
 * straddles two of them, some runs broken by a gap byte; against the DP
 * oracle string by string. Then the same through the vectorised
 * evaluator over consecutive interned ids (the GPU's tabulated id
 * ranges), like() and contains(). */
static void test_like_runs(void)
{
    uint64_t x = 4242;
    int wrong = 0;
    enum { N = 300 };
    static char buf[N * 24];
    const char *text[N];
    size_t len[N];
    bool out[N];
    for (int round = 0; round < 3000; round++) {
        const char *abc = round % 2 ? "ab" : "abc";
        size_t at = 0;
        for (int i = 0; i < N; i++) {
            if (next_rand(&x) % 50 == 0)
                buf[at++] = 'a';   /* a gap: the run breaks here */
            len[i] = next_rand(&x) % 12;
            text[i] = buf + at;
            for (size_t k = 0; k < len[i]; k++)
                buf[at++] = abc[next_rand(&x) % strlen(abc)];
            buf[at++] = '\0';
        }
        char p[24];
        size_t m = random_pattern(&x, abc, round % 5 == 0, p);
        rf_like_pattern lp;
        if (round % 4 == 3) {
            m = 1 + next_rand(&x) % 4;   /* contains: one word */
            for (size_t k = 0; k < m; k++)
                p[k] = abc[next_rand(&x) % strlen(abc)];
            rf_contains_compile(&lp, p, m);
        } else {
            rf_like_compile(&lp, p, m);
        }
        rf_like_run_many(&lp, text, len, N, out);
        for (int i = 0; i < N; i++) {
            bool want = round % 4 == 3 ? naive_contains(text[i], len[i], p, m)
                                       : like_table(text[i], len[i], p, m);
            if (out[i] != want && wrong++ < 5)
                fprintf(stderr, "\nrun of texts: '%.*s' against '%.*s' wrong\n", (int)len[i], text[i], (int)m, p);
        }
    }
    CU_ASSERT_EQUAL(wrong, 0);

    /* Through rf_code_eval_batch over consecutive ids. */
    rf_str_reset();
    enum { IDS = 2500 };
    rf_word first = 0;
    for (int i = 0; i < IDS; i++) {
        char s[16];
        size_t n = 0;
        while (n < 6)
            s[n++] = "abc"[next_rand(&x) % 3];
        n += (size_t)snprintf(s + n, sizeof s - n, "%d", i);   /* distinct: consecutive ids */
        rf_word id = rf_str_intern(s, n);
        if (i == 0)
            first = id;
        CU_ASSERT_EQUAL(id, first + (rf_word)i);
    }
    rf_word *ids = calloc(IDS, sizeof *ids), *dst = calloc(IDS, sizeof *dst);
    rf_word *cols[1] = {ids};
    for (int i = 0; i < IDS; i++)
        ids[i] = first + (rf_word)i;
    for (int round = 0; round < 200; round++) {
        char p[24];
        size_t m = random_pattern(&x, "abc", false, p);
        bool contains = round % 3 == 2;
        rf_expr *e = rf_expr_binary(contains ? RF_EX_CONTAINS : RF_EX_LIKE, RF_TYPE_BOOL,
                                    rf_expr_leaf(RF_EX_COL, RF_TYPE_STRING, 0),
                                    rf_expr_const(RF_TYPE_STRING, rf_str_intern(p, m)));
        rf_code c;
        rf_code_from_expr(&c, e);
        rf_status st;
        rf_status_init(&st);
        CU_ASSERT_TRUE(rf_code_eval_batch(&c, cols, 0, IDS, dst, &st));
        for (int i = 0; i < IDS; i++) {
            const char *s = rf_str_get(ids[i]);
            size_t n = rf_str_len(ids[i]);
            bool want = contains ? naive_contains(s, n, p, m) : like_table(s, n, p, m);
            if ((dst[i] != 0) != want && wrong++ < 5)
                fprintf(stderr, "\n%s('%s', '%.*s') over an id range wrong\n", contains ? "contains" : "like", s,
                        (int)m, p);
        }
        rf_code_free(&c);
        rf_expr_free(e);
    }
    free(ids);
    free(dst);
    CU_ASSERT_EQUAL(wrong, 0);
}

/* A MAP over 70,000 rows whose string ids span a dense range, in shuffled
 * order: its like/contains are tabulated over the range first (map.c,
 * string_tables; RF_CPU_STRING_TABLES=off matches each row's text). The
 * rows kept, in order, against the DP oracle, both ways. */
static void test_like_map_tables(void)
{
    rf_str_reset();
    enum { ROWS = 70000, IDS = 50000 };
    uint64_t x = 99;
    rf_word first = 0;
    for (int i = 0; i < IDS; i++) {
        char s[24];
        size_t n = 0, len = 3 + next_rand(&x) % 10;
        while (n < len)
            s[n++] = "abc"[next_rand(&x) % 3];
        n += (size_t)snprintf(s + n, sizeof s - n, "#%d", i);   /* distinct */
        rf_word id = rf_str_intern(s, n);
        if (i == 0)
            first = id;
    }
    rf_table in;
    rf_table_init(&in, 2);
    rf_table_resize(&in, ROWS);
    for (size_t r = 0; r < ROWS; r++) {
        in.cols[0][r] = first + (rf_word)(next_rand(&x) % IDS);   /* shuffled, some ids twice */
        in.cols[1][r] = (rf_word)r;
    }
    int wrong = 0;
    for (int round = 0; round < 24; round++) {
        char p[24], w[8];
        size_t m = random_pattern(&x, "abc", round % 4 == 0, p), wn = 1 + next_rand(&x) % 3;
        for (size_t k = 0; k < wn; k++)
            w[k] = "abc"[next_rand(&x) % 3];
        rf_expr *e = rf_expr_binary(
            RF_EX_AND, RF_TYPE_BOOL,
            rf_expr_binary(RF_EX_LIKE, RF_TYPE_BOOL, rf_expr_leaf(RF_EX_COL, RF_TYPE_STRING, 0),
                           rf_expr_const(RF_TYPE_STRING, rf_str_intern(p, m))),
            rf_expr_unary(RF_EX_NOT, RF_TYPE_BOOL,
                          rf_expr_binary(RF_EX_CONTAINS, RF_TYPE_BOOL, rf_expr_leaf(RF_EX_COL, RF_TYPE_STRING, 0),
                                         rf_expr_const(RF_TYPE_STRING, rf_str_intern(w, wn)))));
        rf_expr *pe = rf_expr_leaf(RF_EX_COL, RF_TYPE_INT64, 1);
        rf_code fc, pc;
        rf_code_from_expr(&fc, e);
        rf_code_from_expr(&pc, pe);
        for (int off = 0; off < 2; off++) {
            if (off)
                setenv("RF_CPU_STRING_TABLES", "off", 1);
            rf_table out;   /* (made by rf_prim_map) */
            rf_status st;
            rf_status_init(&st);
            CU_ASSERT_TRUE(rf_prim_map(&in, &fc, 1, &pc, &out, &st));
            size_t k = 0;
            for (size_t r = 0; r < ROWS; r++) {
                const char *t = rf_str_get(in.cols[0][r]);
                size_t n = rf_str_len(in.cols[0][r]);
                if (!like_table(t, n, p, m) || naive_contains(t, n, w, wn))
                    continue;
                if ((k >= out.nrows || out.cols[0][k] != (rf_word)r) && wrong++ < 5)
                    fprintf(stderr, "\nmap like('%.*s') && !contains('%.*s'), tables %s: row %zu missing\n", (int)m, p,
                            (int)wn, w, off ? "off" : "on", r);
                k++;
            }
            CU_ASSERT_EQUAL(out.nrows, k);
            rf_table_free(&out);
            if (off)
                unsetenv("RF_CPU_STRING_TABLES");
        }
        rf_code_free(&fc);
        rf_code_free(&pc);
        rf_expr_free(e);
        rf_expr_free(pe);
    }
    rf_table_free(&in);
    CU_ASSERT_EQUAL(wrong, 0);
}

/* OR trees of `substr(s, a, b) = CONST` (eval.c: one substring a row
 * looked for among the constants where every leaf takes the same one):
 * random strings, 1-6 leaves, sometimes one leaf on another substring or
 * a `!=` leaf (then evaluated leaf by leaf), against a row-by-row oracle. */
static void test_substr_in_list(void)
{
    rf_str_reset();
    enum { ROWS = 3000 };
    uint64_t x = 2024;
    rf_word *ids = calloc(ROWS, sizeof *ids), *dst = calloc(ROWS, sizeof *dst), *cols[1] = {ids};
    for (int r = 0; r < ROWS; r++) {
        char t[8];
        size_t n = next_rand(&x) % 5;
        for (size_t i = 0; i < n; i++)
            t[i] = "ab"[next_rand(&x) % 2];
        ids[r] = rf_str_intern(t, n);
    }
    int wrong = 0;
    for (int round = 0; round < 300; round++) {
        int leaves = 1 + (int)(next_rand(&x) % 6), odd = round % 5 == 0 ? (int)(next_rand(&x) % (unsigned)leaves) : -1;
        bool ne = round % 7 == 0;
        int64_t from = 1 + (int64_t)(next_rand(&x) % 3), len = (int64_t)(next_rand(&x) % 3);
        char want[6][4];
        size_t wn[6];
        int64_t lf[6], ll[6];
        rf_expr *e = NULL;
        for (int j = 0; j < leaves; j++) {
            wn[j] = next_rand(&x) % 3;
            for (size_t i = 0; i < wn[j]; i++)
                want[j][i] = "ab"[next_rand(&x) % 2];
            lf[j] = j == odd ? from + 1 : from;
            ll[j] = len;
            rf_expr *sub = rf_expr_ternary(RF_EX_SUBSTR, RF_TYPE_STRING, rf_expr_leaf(RF_EX_COL, RF_TYPE_STRING, 0),
                                           rf_expr_const(RF_TYPE_INT64, (rf_word)lf[j]),
                                           rf_expr_const(RF_TYPE_INT64, (rf_word)ll[j]));
            rf_expr *leaf = rf_expr_binary(ne && j == leaves - 1 ? RF_EX_NE : RF_EX_EQ, RF_TYPE_BOOL, sub,
                                           rf_expr_const(RF_TYPE_STRING, rf_str_intern(want[j], wn[j])));
            leaf->b->type = RF_TYPE_STRING;
            e = e ? rf_expr_binary(RF_EX_OR, RF_TYPE_BOOL, e, leaf) : leaf;
        }
        rf_code c;
        rf_code_from_expr(&c, e);
        for (int k = 0; k < c.n; k++)
            if (c.ins[k].op == RF_EX_EQ || c.ins[k].op == RF_EX_NE)
                c.ins[k].arg_type = RF_TYPE_STRING;
        rf_status st;
        rf_status_init(&st);
        CU_ASSERT_TRUE(rf_code_eval_batch(&c, cols, 0, ROWS, dst, &st));
        for (int r = 0; r < ROWS; r++) {
            const char *t = rf_str_get(ids[r]);
            size_t n = rf_str_len(ids[r]);
            bool any = false;
            for (int j = 0; j < leaves; j++) {
                size_t lo = (size_t)lf[j] - 1 < n ? (size_t)lf[j] - 1 : n;
                size_t hi = lo + (size_t)ll[j] < n ? lo + (size_t)ll[j] : n;
                bool eq = hi - lo == wn[j] && memcmp(t + lo, want[j], wn[j]) == 0;
                any = any || (ne && j == leaves - 1 ? !eq : eq);
            }
            if ((dst[r] != 0) != any && wrong++ < 5)
                fprintf(stderr, "\nsubstr in-list, round %d, '%.*s': %d, want %d\n", round, (int)n, t, (int)dst[r], any);
        }
        rf_code_free(&c);
        rf_expr_free(e);
    }
    free(ids);
    free(dst);
    CU_ASSERT_EQUAL(wrong, 0);
}

int main(void)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    CU_pSuite s = CU_add_suite("scalar operators", NULL, NULL);
    CU_add_test(s, "checked int32/int64 arithmetic", test_int_overflow);
    CU_add_test(s, "overflow in the vectorised fast loops", test_vector_overflow);
    CU_add_test(s, "decimal arithmetic", test_decimal_arith);
    CU_add_test(s, "decimal conversions", test_decimal_casts);
    CU_add_test(s, "date arithmetic", test_date_arith);
    CU_add_test(s, "year, month, day, add_months, add_years", test_date_functions);
    CU_add_test(s, "string functions", test_string_functions);
    CU_add_test(s, "like against its definition (random)", test_like_random);
    CU_add_test(s, "like and contains over long strings (random)", test_like_long);
    CU_add_test(s, "like and contains over texts back to back (random)", test_like_runs);
    CU_add_test(s, "like and contains tabulated over a MAP's range of ids", test_like_map_tables);
    CU_add_test(s, "or trees of substr(...) = constant", test_substr_in_list);
    CU_add_test(s, "if evaluates the branch taken only", test_if);
    CU_add_test(s, "arity-3 code", test_code_check);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures();
    CU_cleanup_registry();
    rf_str_reset();
    return failed ? 1 : 0;
}
