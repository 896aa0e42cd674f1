/* Values as text: the formatter (shortest floats, string escapes), the fact
 * reader's checks (exact messages), and the property that every value the
 * output writer writes reads back as the same value: random tables of every
 * type (seeded, edge cases mixed in) go through rf_write_tsv and
 * rf_parse_facts / rf_read_facts and must come back word for word. */
#define _POSIX_C_SOURCE 200809L
#include <CUnit/Basic.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime.h"
#include "rf_scalar_ops.h"

/* ---- helpers ---- */
static uint64_t g_rng;

static uint64_t rnd(void) /* splitmix64 */
{
    uint64_t z = (g_rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static rf_word str(const char *s) { return rf_str_intern(s, strlen(s)); }

static rf_word dbl(double d) { return rf_word_from_double(d); }

static rf_word bits(uint64_t b)
{
    double d;
    memcpy(&d, &b, sizeof d);
    return rf_word_from_double(d);
}

static const char *fmt(rf_type t, rf_word w)
{
    static char buf[256];
    memset(buf, 'X', sizeof buf);
    int n = rf_value_format(t, w, buf, sizeof buf);
    CU_ASSERT(n >= 0 && (size_t)n < sizeof buf && strlen(buf) == (size_t)n);
    return buf;
}

/* The significant digits of a number's text (leading and trailing zeros
 * dropped): "1.50e+03" -> "15", "10000" -> "1", "0.0025" -> "25". */
static void sig_digits(const char *text, char *out)
{
    size_t n = 0;
    for (const char *p = text; *p && *p != 'e' && *p != 'E'; p++)
        if (*p >= '0' && *p <= '9' && (n || *p != '0'))
            out[n++] = *p;
    while (n && out[n - 1] == '0')
        n--;
    out[n] = '\0';
}

/* The fewest significant digits that read back as d, found the slow way. */
static void shortest_ref(double d, char *out)
{
    char buf[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*e", prec - 1, d);
        if (strtod(buf, NULL) == d)
            break;
    }
    sig_digits(buf, out);
}

static char *write_table(const rf_table *t, const rf_type *types, size_t *len)
{
    char *out = NULL;
    FILE *f = open_memstream(&out, len);
    CU_ASSERT_TRUE(rf_write_tsv(f, t, types));
    fclose(f);
    return out;
}

/* Parses text as one row of one field of type t; returns the message on
 * failure ("" on success, with the value in *w). */
static const char *parse1(const char *text, rf_file_format ff, rf_type t, rf_word *w)
{
    static rf_status st;
    rf_table tab;
    rf_table_init(&tab, 1);
    rf_status_init(&st);
    bool ok = rf_parse_facts("f.tsv", text, strlen(text), ff, 1, &t, NULL, &tab, &st);
    if (ok) {
        CU_ASSERT_EQUAL(tab.nrows, 1);
        if (tab.nrows == 1)
            *w = tab.cols[0][0];
    } else {
        CU_ASSERT_EQUAL(st.code, RF_EXIT_RUNTIME_ERROR);
    }
    rf_table_free(&tab);
    return ok ? "" : st.message;
}

static void expect_msg(const char *text, rf_type t, const char *msg)
{
    rf_word w;
    const char *got = parse1(text, RF_FORMAT_TSV, t, &w);
    CU_ASSERT_STRING_EQUAL(got, msg);
    if (strcmp(got, msg) != 0)
        fprintf(stderr, "\n  input '%s': got \"%s\", expected \"%s\"\n", text, got, msg);
}

static void expect_word(const char *text, rf_file_format ff, rf_type t, rf_word want)
{
    rf_word w = ~want;
    const char *got = parse1(text, ff, t, &w);
    CU_ASSERT_STRING_EQUAL(got, "");
    CU_ASSERT_EQUAL(w, want);
    if (*got || w != want)
        fprintf(stderr, "\n  input '%s': %s (word %016" PRIx64 ", expected %016" PRIx64 ")\n", text, got, w,
                want);
}

/* ---- the formatter ---- */
static void test_format_floats(void)
{
    CU_ASSERT_STRING_EQUAL(fmt(RF_TYPE_FLOAT64, dbl(5e-324)), "5e-324");
    CU_ASSERT_STRING_EQUAL(fmt(RF_TYPE_FLOAT64, dbl(-5e-324)), "-5e-324");
    CU_ASSERT_STRING_EQUAL(fmt(RF_TYPE_FLOAT64, dbl(1e-320)), "1e-320");
    CU_ASSERT_STRING_EQUAL(fmt(RF_TYPE_FLOAT64, bits(0x000fffffffffffffull)), "2.225073858507201e-308");
    CU_ASSERT_STRING_EQUAL(fmt(RF_TYPE_FLOAT64, dbl(DBL_MIN)), "2.2250738585072014e-308");
    CU_ASSERT_STRING_EQUAL(fmt(RF_TYPE_FLOAT64, dbl(DBL_MAX)), "1.7976931348623157e+308");
    CU_ASSERT_STRING_EQUAL(fmt(RF_TYPE_FLOAT64, dbl(0.1)), "0.1");
    CU_ASSERT_STRING_EQUAL(fmt(RF_TYPE_FLOAT64, dbl(0.1 + 0.2)), "0.30000000000000004");
    CU_ASSERT_STRING_EQUAL(fmt(RF_TYPE_FLOAT64, dbl(1e300)), "1e+300");
    CU_ASSERT_STRING_EQUAL(fmt(RF_TYPE_FLOAT64, dbl(1.5)), "1.5");
    CU_ASSERT_STRING_EQUAL(fmt(RF_TYPE_FLOAT64, dbl(-2)), "-2");
    CU_ASSERT_STRING_EQUAL(fmt(RF_TYPE_FLOAT64, dbl(0.0)), "0");
    /* -0.0 is normalised to 0 in words; a raw -0.0 word prints as 0 too. */
    CU_ASSERT_EQUAL(dbl(-0.0), dbl(0.0));
    CU_ASSERT_STRING_EQUAL(fmt(RF_TYPE_FLOAT64, 0x8000000000000000ull), "0");
    CU_ASSERT_STRING_EQUAL(fmt(RF_TYPE_FLOAT64, dbl(123456789012345680.0)), "1.2345678901234568e+17");
    /* Output precision buffer: snprintf semantics when cap is short. */
    char small[4];
    CU_ASSERT_EQUAL(rf_value_format(RF_TYPE_FLOAT64, dbl(5e-324), small, sizeof small), 6);
    CU_ASSERT_STRING_EQUAL(small, "5e-");
}

static void test_format_other(void)
{
    CU_ASSERT_STRING_EQUAL(fmt(RF_TYPE_INT64, rf_word_from_int(INT64_MIN)), "-9223372036854775808");
    CU_ASSERT_STRING_EQUAL(fmt(RF_TYPE_INT64, rf_word_from_int(INT64_MAX)), "9223372036854775807");
    CU_ASSERT_STRING_EQUAL(fmt(RF_TYPE_INT32, rf_word_from_int(INT32_MIN)), "-2147483648");
    CU_ASSERT_STRING_EQUAL(fmt(RF_TYPE_BOOL, 1), "true");
    CU_ASSERT_STRING_EQUAL(fmt(RF_TYPE_BOOL, 0), "false");
    /* Strings are formatted as the output writes them (design.md). */
    CU_ASSERT_STRING_EQUAL(fmt(RF_TYPE_STRING, str("a\tb\nc\rd\\e")), "a\\tb\\nc\\rd\\\\e");
    CU_ASSERT_STRING_EQUAL(fmt(RF_TYPE_STRING, str("#x#")), "\\#x#");
    CU_ASSERT_STRING_EQUAL(fmt(RF_TYPE_STRING, str("")), "\\e");
    CU_ASSERT_STRING_EQUAL(fmt(RF_TYPE_STRING, str("e \"q\" 'x'")), "e \"q\" 'x'");
    /* Long strings: whole length returned, text cut at cap - 1. */
    char text[301], want[601], buf[700];
    for (int i = 0; i < 300; i++)
        text[i] = i % 2 ? 'a' : '\t';
    text[300] = '\0';
    for (int i = 0; i < 600; i++)
        want[i] = i % 3 == 0 ? '\\' : i % 3 == 1 ? 't' : 'a';
    want[450] = '\0';
    rf_word w = str(text);
    CU_ASSERT_EQUAL(rf_value_format(RF_TYPE_STRING, w, buf, sizeof buf), 450);
    CU_ASSERT_STRING_EQUAL(buf, want);
    CU_ASSERT_EQUAL(rf_value_format(RF_TYPE_STRING, w, buf, 11), 450);
    CU_ASSERT_STRING_EQUAL(buf, "\\ta\\ta\\ta\\");
    CU_ASSERT_EQUAL(rf_value_format(RF_TYPE_STRING, w, NULL, 0), 450);
}

/* ---- what the reader accepts ---- */
static void test_parse_accepts(void)
{
    rf_type F = RF_TYPE_FLOAT64, S = RF_TYPE_STRING, B = RF_TYPE_BOOL;
    expect_word("5e-324\n", RF_FORMAT_TSV, F, dbl(5e-324));
    expect_word("4.9406564584124654e-324\n", RF_FORMAT_TSV, F, dbl(5e-324));
    expect_word("2.2250738585072014e-308\n", RF_FORMAT_TSV, F, dbl(DBL_MIN));
    expect_word("-0.0\n", RF_FORMAT_TSV, F, dbl(0.0));
    expect_word("-0\n", RF_FORMAT_TSV, F, dbl(0.0));
    expect_word("0e-999\n", RF_FORMAT_TSV, F, dbl(0.0));
    expect_word(" 2.5 \n", RF_FORMAT_TSV, F, dbl(2.5));
    expect_word("+1.5E2\n", RF_FORMAT_TSV, F, dbl(150));
    expect_word(".5\n", RF_FORMAT_TSV, F, dbl(0.5));
    expect_word("5.\n", RF_FORMAT_TSV, F, dbl(5));
    expect_word(" -5.e-1\n", RF_FORMAT_TSV, F, dbl(-0.5));
    expect_word("7\n", RF_FORMAT_TSV, F, dbl(7));
    expect_word("1.7976931348623157e308\n", RF_FORMAT_TSV, F, dbl(DBL_MAX));
    expect_word("-9223372036854775808\n", RF_FORMAT_TSV, RF_TYPE_INT64, rf_word_from_int(INT64_MIN));
    expect_word("9223372036854775807\n", RF_FORMAT_TSV, RF_TYPE_INT64, rf_word_from_int(INT64_MAX));
    expect_word("-2147483648\n", RF_FORMAT_TSV, RF_TYPE_INT32, rf_word_from_int(INT32_MIN));
    expect_word("2147483647\n", RF_FORMAT_TSV, RF_TYPE_INT32, rf_word_from_int(INT32_MAX));
    expect_word("true\n", RF_FORMAT_TSV, B, 1);
    expect_word("false\r\n", RF_FORMAT_TSV, B, 0);
    expect_word(" true \n", RF_FORMAT_TSV, B, 1);
    expect_word("+7\n", RF_FORMAT_TSV, RF_TYPE_INT32, rf_word_from_int(7));
    /* TSV escapes: exactly what the writer writes. */
    expect_word("a\\tb\\nc\\rd\\\\e\\#f\n", RF_FORMAT_TSV, S, str("a\tb\nc\rd\\e#f"));
    expect_word("\\#x\n", RF_FORMAT_TSV, S, str("#x"));
    expect_word("\\e\n", RF_FORMAT_TSV, S, str(""));
    expect_word(" \n", RF_FORMAT_TSV, S, str(" "));
    expect_word("q\"'\n", RF_FORMAT_TSV, S, str("q\"'"));
    /* CSV: quoting only; a backslash is an ordinary character there. */
    expect_word("\"a\\qb\\t\"\n", RF_FORMAT_CSV, S, str("a\\qb\\t"));
    expect_word("x\\y\n", RF_FORMAT_CSV, S, str("x\\y"));
    expect_word("\"#x\"\n", RF_FORMAT_CSV, S, str("#x"));
    expect_word("\"\"\n", RF_FORMAT_CSV, S, str(""));
    expect_word("\\e\n", RF_FORMAT_CSV, S, str("\\e"));
}

static void test_parse_rejects(void)
{
    rf_type F = RF_TYPE_FLOAT64, S = RF_TYPE_STRING, B = RF_TYPE_BOOL;
    expect_msg("nan\n", F, "f.tsv:1: error: field 1: not a finite number: 'nan'");
    expect_msg("1.5\n-NaN\n", F, "f.tsv:2: error: field 1: not a finite number: '-NaN'");
    expect_msg("inf\n", F, "f.tsv:1: error: field 1: not a finite number: 'inf'");
    expect_msg("-Infinity\n", F, "f.tsv:1: error: field 1: not a finite number: '-Infinity'");
    expect_msg("0x1p3\n", F, "f.tsv:1: error: field 1: hex floats are not accepted: '0x1p3'");
    expect_msg("-0X1.8P1\n", F, "f.tsv:1: error: field 1: hex floats are not accepted: '-0X1.8P1'");
    expect_msg("1e400\n", F, "f.tsv:1: error: field 1: number out of range for float64: '1e400'");
    expect_msg("1e-400\n", F, "f.tsv:1: error: field 1: number out of range for float64: '1e-400'");
    expect_msg("-2e-324\n", F, "f.tsv:1: error: field 1: number out of range for float64: '-2e-324'");
    expect_msg("1.5x\n", F, "f.tsv:1: error: field 1: not a number: '1.5x'");
    expect_msg("1e\n", F, "f.tsv:1: error: field 1: not a number: '1e'");
    expect_msg(".\n", F, "f.tsv:1: error: field 1: not a number: '.'");
    expect_msg("\\e\n", F, "f.tsv:1: error: field 1: not a number: '\\e'");
    expect_msg("1\n", B, "f.tsv:1: error: field 1: not a bool (true/false): '1'");
    expect_msg("0\n", B, "f.tsv:1: error: field 1: not a bool (true/false): '0'");
    expect_msg("TRUE\n", B, "f.tsv:1: error: field 1: not a bool (true/false): 'TRUE'");
    expect_msg("9223372036854775808\n", RF_TYPE_INT64,
               "f.tsv:1: error: field 1: integer out of range for int64: '9223372036854775808'");
    expect_msg("-2147483649\n", RF_TYPE_INT32,
               "f.tsv:1: error: field 1: integer out of range for int32: '-2147483649'");
    expect_msg("ok\nx\\qy\n", S, "f.tsv:2: error: field 1: bad escape '\\q': 'x\\qy'");
    expect_msg("ab\\\n", S, "f.tsv:1: error: field 1: bad escape: '\\' at the end of the field: 'ab\\'");
    expect_msg("a\\eb\n", S, "f.tsv:1: error: field 1: bad escape '\\e' ('\\e' stands alone for the empty string): 'a\\eb'");
    expect_msg("\\\"q\n", S, "f.tsv:1: error: field 1: bad escape '\\\"': '\\\"q'");
    /* The field is named in rows of several columns too. */
    rf_type two[] = {RF_TYPE_INT32, RF_TYPE_STRING};
    rf_table t;
    rf_table_init(&t, 2);
    rf_status st;
    rf_status_init(&st);
    const char *text = "1\tok\n# c\n2\tx\\qy\n";
    CU_ASSERT_FALSE(rf_parse_facts("d.tsv", text, strlen(text), RF_FORMAT_TSV, 2, two, NULL, &t, &st));
    CU_ASSERT_STRING_EQUAL(st.message, "d.tsv:3: error: field 2: bad escape '\\q': 'x\\qy'");
    rf_table_free(&t);
}

/* A zero-arity relation: the empty tuple is written as an empty line, and an
 * empty line reads back as it (any other line is an error). */
static void test_zero_arity(void)
{
    rf_table t;
    rf_status st;
    rf_status_init(&st);
    rf_table_init(&t, 0);
    CU_ASSERT_TRUE(rf_parse_facts("z.tsv", "", 0, RF_FORMAT_TSV, 0, NULL, NULL, &t, &st));
    CU_ASSERT_EQUAL(t.nrows, 0);
    CU_ASSERT_TRUE(rf_parse_facts("z.tsv", "# none\n", 7, RF_FORMAT_TSV, 0, NULL, NULL, &t, &st));
    CU_ASSERT_EQUAL(t.nrows, 0);
    t.nrows = 1;
    size_t len;
    char *out = write_table(&t, NULL, &len);
    CU_ASSERT_STRING_EQUAL(out, "\n");
    rf_table_clear(&t);
    CU_ASSERT_TRUE(rf_parse_facts("z.tsv", out, len, RF_FORMAT_TSV, 0, NULL, NULL, &t, &st));
    CU_ASSERT_EQUAL(t.nrows, 1);
    free(out);
    rf_table_free(&t);
}

/* ---- dates ---- */
static int64_t date_of(const char *text)
{
    int64_t d = INT64_MIN;
    const char *why = NULL;
    CU_ASSERT_TRUE(rf_date_parse(text, strlen(text), &d, &why));
    if (why)
        fprintf(stderr, "\n  date '%s': %s\n", text, why);
    return d;
}

static const char *date_why(const char *text)
{
    int64_t d;
    const char *why = "";
    CU_ASSERT_FALSE(rf_date_parse(text, strlen(text), &d, &why));
    return why;
}

static void test_dates(void)
{
    CU_ASSERT_EQUAL(date_of("1970-01-01"), 0);
    CU_ASSERT_EQUAL(date_of("1969-12-31"), -1);
    CU_ASSERT_EQUAL(date_of("2000-01-01"), 10957);
    CU_ASSERT_EQUAL(date_of("2000-02-29"), 11016);    /* 2000: divisible by 400, leap */
    CU_ASSERT_EQUAL(date_of("2000-03-01"), 11017);
    CU_ASSERT_EQUAL(date_of("1900-02-28"), -25509);
    CU_ASSERT_EQUAL(date_of("1900-03-01"), -25508);   /* 1900: no Feb 29 */
    CU_ASSERT_EQUAL(date_of("1996-02-29") + 1, date_of("1996-03-01"));
    CU_ASSERT_EQUAL(date_of("1995-03-15"), 9204);
    CU_ASSERT_EQUAL(date_of("0001-01-01"), RF_DATE_MIN_DAYS);
    CU_ASSERT_EQUAL(date_of("9999-12-31"), RF_DATE_MAX_DAYS);
    CU_ASSERT_STRING_EQUAL(fmt(RF_TYPE_DATE, (rf_word)RF_DATE_MIN_DAYS), "0001-01-01");
    CU_ASSERT_STRING_EQUAL(fmt(RF_TYPE_DATE, (rf_word)RF_DATE_MAX_DAYS), "9999-12-31");
    CU_ASSERT_STRING_EQUAL(fmt(RF_TYPE_DATE, rf_word_from_int(11016)), "2000-02-29");
    CU_ASSERT_STRING_EQUAL(fmt(RF_TYPE_DATE, rf_word_from_int(-25508)), "1900-03-01");
    CU_ASSERT_STRING_EQUAL(fmt(RF_TYPE_DATE, rf_word_from_int(-1)), "1969-12-31");
    CU_ASSERT_STRING_EQUAL(date_why("1900-02-29"), "day out of range for its month");
    CU_ASSERT_STRING_EQUAL(date_why("1999-02-29"), "day out of range for its month");
    CU_ASSERT_STRING_EQUAL(date_why("2001-04-31"), "day out of range for its month");
    CU_ASSERT_STRING_EQUAL(date_why("2001-01-00"), "day out of range for its month");
    CU_ASSERT_STRING_EQUAL(date_why("2001-13-01"), "month out of range (01..12)");
    CU_ASSERT_STRING_EQUAL(date_why("2001-00-10"), "month out of range (01..12)");
    CU_ASSERT_STRING_EQUAL(date_why("0000-12-31"), "year out of range (0001..9999)");
    CU_ASSERT_STRING_EQUAL(date_why("10000-01-01"), "not a date (YYYY-MM-DD)");
    CU_ASSERT_STRING_EQUAL(date_why("1995-3-15"), "not a date (YYYY-MM-DD)");
    CU_ASSERT_STRING_EQUAL(date_why("1995/03/15"), "not a date (YYYY-MM-DD)");
    CU_ASSERT_STRING_EQUAL(date_why("1995-03-1x"), "not a date (YYYY-MM-DD)");
    CU_ASSERT_STRING_EQUAL(date_why(""), "not a date (YYYY-MM-DD)");
    /* Every day of the range: civil -> days -> civil is the identity, days
     * are consecutive, and month lengths follow the leap rule. */
    int64_t prev = RF_DATE_MIN_DAYS - 1, bad = 0;
    for (int64_t y = 1; y <= 9999; y++)
        for (int m = 1; m <= 12; m++)
            for (int d = 1; d <= rf_cal_month_days(y, m); d++) {
                int64_t z = rf_cal_days(y, m, d), y2;
                int m2, d2;
                rf_cal_civil(z, &y2, &m2, &d2);
                if ((z != prev + 1 || y2 != y || m2 != m || d2 != d) && bad++ < 5)
                    fprintf(stderr, "\n  %04d-%02d-%02d -> %" PRId64 "\n", (int)y, m, d, z);
                prev = z;
            }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(prev, RF_DATE_MAX_DAYS);
    CU_ASSERT_EQUAL(rf_cal_days(2001, 1, 1) - rf_cal_days(2000, 1, 1), 366);
    CU_ASSERT_EQUAL(rf_cal_days(1901, 1, 1) - rf_cal_days(1900, 1, 1), 365);
    CU_ASSERT_TRUE(rf_cal_leap(2000) && rf_cal_leap(1996) && rf_cal_leap(4));
    CU_ASSERT_FALSE(rf_cal_leap(1900) || rf_cal_leap(2100) || rf_cal_leap(1) || rf_cal_leap(9999));
    /* Ordering is the signed order of the words. */
    CU_ASSERT(rf_value_compare(RF_TYPE_DATE, rf_word_from_int(-1), rf_word_from_int(0)) < 0);
    CU_ASSERT(rf_value_compare(RF_TYPE_DATE, (rf_word)RF_DATE_MAX_DAYS, (rf_word)RF_DATE_MIN_DAYS) > 0);
    /* The reader: with blanks, and its messages. */
    expect_word(" 1995-03-15\r\n", RF_FORMAT_TSV, RF_TYPE_DATE, rf_word_from_int(9204));
    expect_msg("1995-02-29\n", RF_TYPE_DATE, "f.tsv:1: error: field 1: day out of range for its month: '1995-02-29'");
}

/* ---- decimals ---- */
static int64_t dec_of(const char *text, int scale)
{
    int64_t v = INT64_MIN;
    const char *why = NULL;
    CU_ASSERT_TRUE(rf_decimal_parse(text, strlen(text), scale, &v, &why));
    if (why)
        fprintf(stderr, "\n  decimal[%d] '%s': %s\n", scale, text, why);
    return v;
}

static const char *dec_why(const char *text, int scale)
{
    int64_t v;
    const char *why = "";
    CU_ASSERT_FALSE(rf_decimal_parse(text, strlen(text), scale, &v, &why));
    return why;
}

static void test_decimals(void)
{
    CU_ASSERT_EQUAL(dec_of("123.40", 2), 12340);
    CU_ASSERT_EQUAL(dec_of("123.4", 2), 12340);        /* fewer digits are padded */
    CU_ASSERT_EQUAL(dec_of("123", 2), 12300);
    CU_ASSERT_EQUAL(dec_of("-0.5", 2), -50);
    CU_ASSERT_EQUAL(dec_of("-0", 2), 0);
    CU_ASSERT_EQUAL(dec_of("0.05", 2), 5);
    CU_ASSERT_EQUAL(dec_of("007", 0), 7);
    CU_ASSERT_EQUAL(dec_of("9223372036854775807", 0), INT64_MAX);
    CU_ASSERT_EQUAL(dec_of("-9223372036854775807", 0), -INT64_MAX);
    CU_ASSERT_EQUAL(dec_of("9.223372036854775807", 18), INT64_MAX);
    CU_ASSERT_EQUAL(dec_of("92233720368547758.07", 2), INT64_MAX);
    CU_ASSERT_EQUAL(dec_of("0.000000000000000001", 18), 1);
    CU_ASSERT_STRING_EQUAL(dec_why("12.345", 2), "has more than 2 decimal places");
    CU_ASSERT_STRING_EQUAL(dec_why("1.0", 0), "has more than 0 decimal places");
    CU_ASSERT_STRING_EQUAL(dec_why("9223372036854775808", 0), "number out of range for decimal[0]");
    CU_ASSERT_STRING_EQUAL(dec_why("-9223372036854775808", 0), "number out of range for decimal[0]");
    CU_ASSERT_STRING_EQUAL(dec_why("92233720368547758.08", 2), "number out of range for decimal[2]");
    CU_ASSERT_STRING_EQUAL(dec_why("10", 18), "number out of range for decimal[18]");
    CU_ASSERT_STRING_EQUAL(dec_why("99999999999999999999999", 0), "number out of range for decimal[0]");
    const char *syntax = "not a decimal number (-digits.digits)";
    CU_ASSERT_STRING_EQUAL(dec_why("+1", 2), syntax);
    CU_ASSERT_STRING_EQUAL(dec_why(".5", 2), syntax);
    CU_ASSERT_STRING_EQUAL(dec_why("5.", 2), syntax);
    CU_ASSERT_STRING_EQUAL(dec_why("1e2", 2), syntax);
    CU_ASSERT_STRING_EQUAL(dec_why("-", 2), syntax);
    CU_ASSERT_STRING_EQUAL(dec_why("1.2.3", 2), syntax);
    CU_ASSERT_STRING_EQUAL(dec_why("", 2), syntax);
    CU_ASSERT_STRING_EQUAL(dec_why("--1", 2), syntax);
    rf_type d2 = rf_type_decimal(2), d0 = rf_type_decimal(0), d6 = rf_type_decimal(6);
    CU_ASSERT_STRING_EQUAL(fmt(d2, rf_word_from_int(-50)), "-0.50");
    CU_ASSERT_STRING_EQUAL(fmt(d2, rf_word_from_int(12340)), "123.40");
    CU_ASSERT_STRING_EQUAL(fmt(d2, rf_word_from_int(5)), "0.05");
    CU_ASSERT_STRING_EQUAL(fmt(d2, rf_word_from_int(0)), "0.00");
    CU_ASSERT_STRING_EQUAL(fmt(d0, rf_word_from_int(12)), "12");
    CU_ASSERT_STRING_EQUAL(fmt(d0, rf_word_from_int(-12)), "-12");
    CU_ASSERT_STRING_EQUAL(fmt(d6, rf_word_from_int(3000000)), "3.000000");
    CU_ASSERT_STRING_EQUAL(fmt(rf_type_decimal(18), rf_word_from_int(-INT64_MAX)), "-9.223372036854775807");
    CU_ASSERT_STRING_EQUAL(fmt(rf_type_decimal(18), rf_word_from_int(1)), "0.000000000000000001");
    CU_ASSERT_STRING_EQUAL(rf_type_name(d2), "decimal[2]");
    CU_ASSERT(rf_value_compare(d2, rf_word_from_int(-50), rf_word_from_int(5)) < 0);
    CU_ASSERT(rf_type_is_numeric(d2) && rf_type_is_signed_word(d2) && !rf_type_is_numeric(RF_TYPE_DATE));
    /* The reader: padded, blanks, and the messages (text first). */
    expect_word(" 1.5 \n", RF_FORMAT_TSV, d2, rf_word_from_int(150));
    expect_msg("12.345\n", d2, "f.tsv:1: error: field 1: 12.345 has more than 2 decimal places");
    expect_msg("1,5\n", d2, "f.tsv:1: error: field 1: not a decimal number (-digits.digits): '1,5'");
}

/* ---- dbgen's .tbl ---- */
static const char *tbl_parse(const char *text, int arity, const rf_type *types, rf_table *t)
{
    static rf_status st;
    rf_status_init(&st);
    rf_table_init(t, arity);
    bool ok = rf_parse_facts("f.tbl", text, strlen(text), RF_FORMAT_TBL, arity, types, NULL, t, &st);
    if (!ok)
        CU_ASSERT_EQUAL(st.code, RF_EXIT_RUNTIME_ERROR);
    return ok ? "" : st.message;
}

static void tbl_rejects(const char *text, const char *msg)
{
    rf_type types[] = {RF_TYPE_INT32, RF_TYPE_STRING, RF_TYPE_DATE, rf_type_decimal(2)};
    rf_table t;
    const char *got = tbl_parse(text, 4, types, &t);
    CU_ASSERT_STRING_EQUAL(got, msg);
    if (strcmp(got, msg) != 0)
        fprintf(stderr, "\n  tbl '%s': got \"%s\", expected \"%s\"\n", text, got, msg);
    rf_table_free(&t);
}

static void test_tbl(void)
{
    CU_ASSERT_EQUAL(rf_format_from_path("lineitem.tbl"), RF_FORMAT_TBL);
    CU_ASSERT_EQUAL(rf_format_from_path("x/ORDERS.TBL"), RF_FORMAT_TBL);
    CU_ASSERT_EQUAL(rf_format_from_path("a.csv"), RF_FORMAT_CSV);
    CU_ASSERT_EQUAL(rf_format_from_path("a.tbl.tsv"), RF_FORMAT_TSV);
    rf_type types[] = {RF_TYPE_INT32, RF_TYPE_STRING, RF_TYPE_DATE, rf_type_decimal(2)};
    rf_table t;
    /* fields as they are: no escapes, '#' and '\\' are data, an empty
     * field is the empty string, fewer fraction digits are padded, CRLF
     * and a last line without a newline are fine */
    const char *good = "1|Clerk#000000951|1996-01-02|173665.47|\n"
                       "2|a\\tb \"q\"|1996-12-01|46929.18|\r\n"
                       "#3||1993-10-14|-0.5|\n"
                       "\n"
                       "4| x |2000-02-29|7|";
    rf_type first_str[] = {RF_TYPE_STRING, RF_TYPE_STRING, RF_TYPE_DATE, rf_type_decimal(2)};
    CU_ASSERT_STRING_EQUAL(tbl_parse(good, 4, types, &t), "f.tbl:3:1: error: field 1: not an integer: '#3'");
    rf_table_free(&t);
    CU_ASSERT_STRING_EQUAL(tbl_parse(good, 4, first_str, &t), "");
    CU_ASSERT_EQUAL(t.nrows, 4);
    if (t.nrows == 4) {
        CU_ASSERT_EQUAL(t.cols[0][0], str("1"));
        CU_ASSERT_EQUAL(t.cols[1][0], str("Clerk#000000951"));
        CU_ASSERT_EQUAL(t.cols[2][0], rf_word_from_int(9497));
        CU_ASSERT_EQUAL(t.cols[3][0], rf_word_from_int(17366547));
        CU_ASSERT_EQUAL(t.cols[1][1], str("a\\tb \"q\""));
        CU_ASSERT_EQUAL(t.cols[3][1], rf_word_from_int(4692918));
        CU_ASSERT_EQUAL(t.cols[0][2], str("#3"));
        CU_ASSERT_EQUAL(t.cols[1][2], str(""));
        CU_ASSERT_EQUAL(t.cols[3][2], rf_word_from_int(-50));
        CU_ASSERT_EQUAL(t.cols[1][3], str(" x "));
        CU_ASSERT_EQUAL(t.cols[2][3], rf_word_from_int(11016));
        CU_ASSERT_EQUAL(t.cols[3][3], rf_word_from_int(700));
    }
    rf_table_free(&t);
    /* one column */
    rf_type one = RF_TYPE_STRING;
    CU_ASSERT_STRING_EQUAL(tbl_parse("|\nx|\n", 1, &one, &t), "");
    CU_ASSERT_EQUAL(t.nrows, 2);
    if (t.nrows == 2)
        CU_ASSERT_EQUAL(t.cols[0][0], str(""));
    rf_table_free(&t);
    /* the errors: FILE:LINE:COL, COL the byte column of the field */
    tbl_rejects("1|abc|1995-03-15|12.34\n", "f.tbl:1:23: error: the line does not end with '|' (tbl format)");
    tbl_rejects("1|abc|1995-03-15|12.34|\n2|b|1995-03-16|1.00\r\n",
                "f.tbl:2:20: error: the line does not end with '|' (tbl format)");
    tbl_rejects("1|abc|1995-02-30|12.34|\n", "f.tbl:1:7: error: field 3: day out of range for its month: '1995-02-30'");
    tbl_rejects("1|abc|95-02-03|12.34|\n", "f.tbl:1:7: error: field 3: not a date (YYYY-MM-DD): '95-02-03'");
    tbl_rejects("1|abc|1995-03-15|12.345|\n", "f.tbl:1:18: error: field 4: 12.345 has more than 2 decimal places");
    tbl_rejects("1|abc|1995-03-15|1,5|\n", "f.tbl:1:18: error: field 4: not a decimal number (-digits.digits): '1,5'");
    tbl_rejects("1|abc|1995-03-15|\n", "f.tbl:1:1: error: expected 4 fields, found 3");
    tbl_rejects("1|abc|1995-03-15|1.00|x|\n", "f.tbl:1:1: error: expected 4 fields, found 5");
    tbl_rejects("1|abc|1995-03-15|1.00||\n", "f.tbl:1:1: error: expected 4 fields, found 5");
    tbl_rejects("x|abc|1995-03-15|1.00|\n", "f.tbl:1:1: error: field 1: not an integer: 'x'");
    tbl_rejects("2147483648|abc|1995-03-15|1.00|\n",
                "f.tbl:1:1: error: field 1: integer out of range for int32: '2147483648'");
}

/* Dates and decimals in output files: their text, and typed order (signed:
 * a negative decimal or a date before 1970 sorts first). */
static void test_write_dates_decimals(void)
{
    rf_type types[] = {RF_TYPE_DATE, rf_type_decimal(2), rf_type_decimal(0)};
    rf_word rows[] = {
        rf_word_from_int(9204), rf_word_from_int(12340), rf_word_from_int(7),
        rf_word_from_int(-1), rf_word_from_int(-50), rf_word_from_int(-12),
        rf_word_from_int(9204), rf_word_from_int(-50), rf_word_from_int(0),
        (rf_word)RF_DATE_MIN_DAYS, rf_word_from_int(5), rf_word_from_int(INT64_MAX),
    };
    rf_table t;
    rf_table_from_rows(&t, 3, rows, 4);
    rf_sort_typed(&t, types);
    size_t len;
    char *out = write_table(&t, types, &len);
    CU_ASSERT_STRING_EQUAL(out, "0001-01-01\t0.05\t9223372036854775807\n"
                                "1969-12-31\t-0.50\t-12\n"
                                "1995-03-15\t-0.50\t0\n"
                                "1995-03-15\t123.40\t7\n");
    free(out);
    rf_table_free(&t);
}

/* ---- the round-trip property ---- */
static const char *const g_edge_strings[] = {
    "", "#", "#x", "##", "\\#x", "\\e", "\\", "\\\\", "\t", "\n", "\r", "\r\n", " ", "  a  ", "a\tb",
    "line\nbreak", "back\\slash", "q\"uote", "'", "e", "\\t", "x\\qy", "#\t#", "end\r", "1", "-0",
    "true", "nan", "\xff\xfe", "caf\xc3\xa9",
};

static rf_word random_string(void)
{
    uint64_t k = rnd() % 4;
    if (k == 0) {
        size_t n = sizeof g_edge_strings / sizeof *g_edge_strings;
        const char *s = g_edge_strings[rnd() % n];
        return rf_str_intern(s, strlen(s));
    }
    static const char special[] = {'\t', '\n', '\r', '\\', '#', '"', '\'', 'e', ' ', 't', 'n', '\0'};
    char buf[24];
    size_t len = (size_t)(rnd() % sizeof buf);
    for (size_t i = 0; i < len; i++) {
        uint64_t r = rnd();
        if (k == 1)
            buf[i] = special[r % sizeof special];
        else if (k == 2)
            buf[i] = (char)(r % 256);
        else
            buf[i] = (char)('a' + r % 26);
    }
    return rf_str_intern(buf, len);
}

static rf_word random_double(void)
{
    static const double edge[] = {0.0, -0.0, 5e-324, -5e-324, 1e-320, 2.2250738585072014e-308,
                                  2.225073858507201e-308, DBL_MAX, -DBL_MAX, 0.1, 0.30000000000000004,
                                  1e300, 1e22, 1e23, 9007199254740993.0, 1.0, 0.5, 2.0, 1024.0,
                                  1.7976931348623155e308, 4.9406564584124654e-324};
    switch (rnd() % 6) {
    case 0:
        return dbl(edge[rnd() % (sizeof edge / sizeof *edge)]);
    case 1: /* subnormal */
        return bits((rnd() & 0x800fffffffffffffull));
    case 2: /* small integer or short decimal */
        return dbl((double)(int64_t)(rnd() % 20001 - 10000) / (double)(1 + rnd() % 1000));
    default: { /* any finite bit pattern */
        uint64_t b;
        do
            b = rnd();
        while (((b >> 52) & 0x7ff) == 0x7ff);
        return bits(b);
    }
    }
}

static rf_word random_value(rf_type t)
{
    static const int64_t ints[] = {0, 1, -1, INT32_MIN, INT32_MAX, INT64_MIN, INT64_MAX, INT64_MIN + 1,
                                   INT64_MAX - 1, (int64_t)INT32_MAX + 1, (int64_t)INT32_MIN - 1};
    switch (t) {
    case RF_TYPE_INT32:
        if (rnd() % 4 == 0)
            return rf_word_from_int(ints[rnd() % 5]);
        return rf_word_from_int((int32_t)(uint32_t)rnd());
    case RF_TYPE_INT64:
        if (rnd() % 4 == 0)
            return rf_word_from_int(ints[rnd() % (sizeof ints / sizeof *ints)]);
        return rf_word_from_int((int64_t)(rnd() >> (rnd() % 64)) * (rnd() % 2 ? 1 : -1));
    case RF_TYPE_FLOAT64:
        return random_double();
    case RF_TYPE_BOOL:
        return rnd() % 2;
    case RF_TYPE_STRING:
        return random_string();
    case RF_TYPE_DATE: {
        static const int64_t edge[] = {RF_DATE_MIN_DAYS, RF_DATE_MAX_DAYS, 0, -1, 1, 11016 /* 2000-02-29 */,
                                       -25508 /* 1900-03-01 */};
        if (rnd() % 4 == 0)
            return rf_word_from_int(edge[rnd() % (sizeof edge / sizeof *edge)]);
        return rf_word_from_int(RF_DATE_MIN_DAYS +
                                (int64_t)(rnd() % (uint64_t)(RF_DATE_MAX_DAYS - RF_DATE_MIN_DAYS + 1)));
    }
    default: {
        /* decimal[s]: any word but INT64_MIN (decimals are symmetric) */
        static const int64_t edge[] = {0, 1, -1, 50, -50, INT64_MAX, -INT64_MAX, 100, -5, 999999999};
        int64_t v;
        if (rnd() % 4 == 0)
            v = edge[rnd() % (sizeof edge / sizeof *edge)];
        else
            v = (int64_t)(rnd() >> (rnd() % 64)) * (rnd() % 2 ? 1 : -1);
        return rf_word_from_int(v == INT64_MIN ? 0 : v);
    }
    }
}

/* Writes nrows random rows of `types`, reads them back (from memory and,
 * once, from a file) and checks word equality, row by row. */
static void roundtrip(int arity, const rf_type *types, size_t nrows)
{
    rf_table t, back;
    rf_table_init(&t, arity);
    rf_word row[8];
    for (size_t r = 0; r < nrows; r++) {
        for (int c = 0; c < arity; c++)
            row[c] = random_value(types[c]);
        rf_table_append_row(&t, row);
    }
    size_t len;
    char *text = write_table(&t, types, &len);
    rf_status st;
    rf_status_init(&st);
    rf_table_init(&back, arity);
    bool ok = rf_parse_facts("rt.tsv", text, len, RF_FORMAT_TSV, arity, types, NULL, &back, &st);
    CU_ASSERT_TRUE(ok);
    if (!ok)
        fprintf(stderr, "\n  %s\n", st.message);
    CU_ASSERT_EQUAL(back.nrows, t.nrows);
    size_t bad = 0;
    for (size_t r = 0; r < t.nrows && r < back.nrows; r++)
        for (int c = 0; c < arity; c++)
            if (t.cols[c][r] != back.cols[c][r] && bad++ < 5)
                fprintf(stderr, "\n  row %zu col %d (%s): wrote '%s'", r, c, rf_type_name(types[c]),
                        fmt(types[c], t.cols[c][r]));
    CU_ASSERT_EQUAL(bad, 0);

    /* The same through a file. */
    char path[] = "/tmp/rf_values_XXXXXX";
    int fd = mkstemp(path);
    CU_ASSERT_TRUE_FATAL(fd >= 0);
    CU_ASSERT_EQUAL((size_t)write(fd, text, len), len);
    close(fd);
    rf_table_clear(&back);
    CU_ASSERT_TRUE(rf_read_facts(path, RF_FORMAT_TSV, arity, types, NULL, &back, &st));
    CU_ASSERT_EQUAL(back.nrows, t.nrows);
    for (int c = 0; c < arity && back.nrows == t.nrows; c++)
        CU_ASSERT_EQUAL(memcmp(back.cols[c], t.cols[c], t.nrows * sizeof(rf_word)), 0);
    unlink(path);

    /* Floats print with the fewest digits that read back. */
    bad = 0;
    for (int c = 0; c < arity; c++)
        if (types[c] == RF_TYPE_FLOAT64)
            for (size_t r = 0; r < t.nrows; r++) {
                char want[40], got[40];
                shortest_ref(rf_word_to_double(t.cols[c][r]), want);
                const char *text = fmt(RF_TYPE_FLOAT64, t.cols[c][r]);
                sig_digits(text, got);
                if (strcmp(got, want) != 0 && bad++ < 5)
                    fprintf(stderr, "\n  float %016" PRIx64 ": '%s', shortest digits '%s'", t.cols[c][r], text,
                            want);
            }
    CU_ASSERT_EQUAL(bad, 0);
    free(text);
    rf_table_free(&t);
    rf_table_free(&back);
}

/* rf_str_fingerprint names the dictionary's strings in id order (the
 * distribution layer's check that every rank's ids mean the same): the
 * same strings interned in the same order agree, another order or one
 * more string does not, and interning a string again changes nothing. */
static uint64_t print_of(const char *const *words, int n)
{
    rf_str_reset();
    for (int i = 0; i < n; i++)
        (void)rf_str_intern(words[i], strlen(words[i]));
    return rf_str_fingerprint();
}

static void test_str_fingerprint(void)
{
    const char *abc[] = {"alpha", "beta", "gamma"}, *acb[] = {"alpha", "gamma", "beta"};
    const char *again[] = {"alpha", "beta", "alpha", "gamma", "beta"}, *more[] = {"alpha", "beta", "gamma", ""};
    uint64_t p = print_of(abc, 3);
    CU_ASSERT_EQUAL(print_of(abc, 3), p);
    CU_ASSERT_EQUAL(print_of(again, 5), p);
    CU_ASSERT_NOT_EQUAL(print_of(acb, 3), p);
    CU_ASSERT_NOT_EQUAL(print_of(more, 4), p);
    CU_ASSERT_NOT_EQUAL(print_of(abc, 2), p);
    rf_str_reset();
    CU_ASSERT_EQUAL(rf_str_count(), 0);
}

static void test_roundtrip(void)
{
    g_rng = 20240613;
    rf_type all[] = {RF_TYPE_STRING, RF_TYPE_INT32, RF_TYPE_INT64, RF_TYPE_FLOAT64, RF_TYPE_BOOL, RF_TYPE_STRING,
                     RF_TYPE_DATE, rf_type_decimal(2)};
    roundtrip(8, all, 4000);
    /* One column: a value alone on its line (blank line, leading '#'). */
    for (int t = RF_TYPE_INT32; t < RF_TYPE_COUNT_; t++) {
        rf_type one = (rf_type)t;
        roundtrip(1, &one, 2000);
    }
    rf_type two[] = {RF_TYPE_FLOAT64, RF_TYPE_STRING};
    roundtrip(2, two, 3000);
}

int main(void)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    CU_pSuite s = CU_add_suite("values", NULL, NULL);
    CU_add_test(s, "format floats", test_format_floats);
    CU_add_test(s, "format ints, bools, strings", test_format_other);
    CU_add_test(s, "reader accepts", test_parse_accepts);
    CU_add_test(s, "reader rejects", test_parse_rejects);
    CU_add_test(s, "zero arity", test_zero_arity);
    CU_add_test(s, "dates", test_dates);
    CU_add_test(s, "decimals", test_decimals);
    CU_add_test(s, "dbgen .tbl files", test_tbl);
    CU_add_test(s, "dates and decimals written in typed order", test_write_dates_decimals);
    CU_add_test(s, "write then read, every type", test_roundtrip);
    CU_add_test(s, "string dictionary fingerprint", test_str_fingerprint);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures();
    CU_cleanup_registry();
    rf_str_reset();
    return failed ? 1 : 0;
}
