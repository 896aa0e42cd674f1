/* Types and values. Every attribute value is stored as one 64-bit word
 * (rf_word) so that relations are plain columnar arrays of uint64_t and the
 * set operations (sort, dedup, join, difference) compare words as unsigned
 * integers: a consistent total order, which is all set semantics needs.
 * Type-aware order (signed ints, doubles, strings) matters only to
 * comparisons in expressions, min/max aggregation and sorted printing.
 *
 *   int32, int64 : two's complement int64 bits (int32 sign-extended)
 *   float64      : IEEE bits, with -0.0 normalised to +0.0 (so equality of
 *                  words is equality of values); NaN is never produced
 *   bool         : 0 or 1
 *   string       : an id in the global string dictionary (rf_strdict), so
 *                  joins and equality on strings are integer work
 *   date         : signed day number, 0 = 1970-01-01 (proleptic Gregorian,
 *                  years 1..9999)
 *   decimal[s]   : exact fixed point, the value times 10^s as a signed
 *                  int64; one rf_type per scale s = 0..18
 *                  (RF_TYPE_DECIMAL0 + s)
 * int32, int64, date and decimal words all order as signed int64. */
#ifndef RF_VALUE_H
#define RF_VALUE_H

#include "rf_common.h"

#include <string.h>

typedef uint64_t rf_word;

typedef enum rf_type {
    RF_TYPE_INVALID = 0,
    RF_TYPE_INT32,
    RF_TYPE_INT64,
    RF_TYPE_FLOAT64,
    RF_TYPE_BOOL,
    RF_TYPE_STRING,
    RF_TYPE_DATE,
    RF_TYPE_DECIMAL0,                           /* decimal[0] .. decimal[18] */
    RF_TYPE_DECIMAL18 = RF_TYPE_DECIMAL0 + 18,
    RF_TYPE_COUNT_
} rf_type;

#define RF_DECIMAL_MAX_SCALE 18

static inline bool rf_type_is_decimal(rf_type t) { return t >= RF_TYPE_DECIMAL0 && t <= RF_TYPE_DECIMAL18; }
static inline int rf_decimal_scale(rf_type t) { return (int)t - (int)RF_TYPE_DECIMAL0; }
static inline rf_type rf_type_decimal(int scale) { return (rf_type)((int)RF_TYPE_DECIMAL0 + scale); }
/* Whether an exact integer or decimal total v fits total()'s result type
 * t (decimals are symmetric: INT64_MIN is out of range). */
static inline bool rf_total_fits(rf_type t, int64_t v)
{
    if (t == RF_TYPE_INT32)
        return v >= INT32_MIN && v <= INT32_MAX;
    if (rf_type_is_decimal(t))
        return v != INT64_MIN;
    return true;
}
/* Words that order as signed int64: int32, int64, date, decimal[s]. */
static inline bool rf_type_is_signed_word(rf_type t)
{
    return t == RF_TYPE_INT32 || t == RF_TYPE_INT64 || t == RF_TYPE_DATE || rf_type_is_decimal(t);
}

const char *rf_type_name(rf_type t);             /* "int32", ... */
rf_type rf_type_from_name(const char *name);      /* RF_TYPE_INVALID if unknown */
bool rf_type_is_numeric(rf_type t);
bool rf_type_is_integer(rf_type t);

static inline rf_word rf_word_from_int(int64_t v) { return (rf_word)v; }
static inline int64_t rf_word_to_int(rf_word w) { return (int64_t)w; }
rf_word rf_word_from_double(double d);
double rf_word_to_double(rf_word w);

/* Compares two words as values of type t (signed, double, string text):
 * the order used for printing and for min/max. Returns <0, 0, >0. */
int rf_value_compare(rf_type t, rf_word a, rf_word b);

/* Parses text as a value of type t (a field of a fact file; docs/design.md
 * "Input files"). Strings are taken as they are (unescaping is the file
 * format's business: rf_str_unescape). Numbers, dates and bools may have
 * blanks around them; ints are decimal, floats as rf_float64_parse, bools
 * exactly true/false, dates as rf_date_parse, decimals as rf_decimal_parse.
 * Returns false on bad syntax or a value out of range; *why explains
 * (static string; one that begins with "has " is meant to follow the text:
 * "12.345 has more than 2 decimal places"). */
bool rf_value_parse(rf_type t, const char *text, size_t len, rf_word *out, const char **why);

/* A date: exactly YYYY-MM-DD, year 0001..9999, month 01..12, day within
 * the month (proleptic Gregorian). *days: 0 = 1970-01-01. */
bool rf_date_parse(const char *text, size_t len, int64_t *days, const char **why);
/* A decimal of `scale` fraction digits: -?digits[.digits] with at most
 * scale fraction digits (fewer are padded), exact; |value * 10^scale| must
 * stay below 2^63 (decimal words are symmetric: INT64_MIN is never one). */
bool rf_decimal_parse(const char *text, size_t len, int scale, int64_t *out, const char **why);
/* Text of a decimal word: exactly `scale` fraction digits ("-0.50", "12"
 * for scale 0), and of a date word (YYYY-MM-DD). snprintf conventions. */
int rf_decimal_format(int64_t v, int scale, char *buf, size_t cap);
int rf_date_format(int64_t days, char *buf, size_t cap);

/* A decimal float64: [+-] digits [. digits] [(e|E) [+-] digits], where
 * either side of the '.' may be empty but not both. Hex floats, nan and inf
 * are refused with their own message; a value that overflows, or a nonzero
 * one that underflows to zero, is "number out of range for float64"
 * (subnormals are in range). The front end converts float literals with it
 * too, so program text and input files agree. */
bool rf_float64_parse(const char *text, size_t len, double *out, const char **why);

/* Formats a value as the output writes it (docs/design.md "Output format"):
 * ints in decimal, doubles in the shortest %.Ng form that reads back exactly
 * (-0.0 as 0), bools as true/false, strings escaped as rf_str_escape,
 * dates YYYY-MM-DD, decimals with exactly s fraction digits.
 * Returns the length of the whole text, writes at most cap-1 chars and a NUL
 * (like snprintf). */
int rf_value_format(rf_type t, rf_word w, char *buf, size_t cap);

/* The text form of a string in TSV files and printed output: tab, newline,
 * carriage return and backslash as \t \n \r \\, a '#' that begins the
 * string as \# (a line starting with '#' is a comment), and the empty string
 * as \e (an empty line is skipped). Writes at most RF_STR_ESCAPED_MAX(len)
 * bytes to dst, no NUL; returns the count. */
#define RF_STR_ESCAPED_MAX(len) (2 * (len) + 2)
size_t rf_str_escape(const char *s, size_t len, char *dst);

/* The inverse: \t \n \r \\ \# anywhere, \e only as the whole text.
 * Writes at most len bytes to dst and sets *outlen. On a bad escape returns
 * false with *bad = the offset of its backslash. */
bool rf_str_unescape(const char *s, size_t len, char *dst, size_t *outlen, size_t *bad);

/* ---- String dictionary: one per process, ids are dense from 0, in order
 * of first insertion. Not thread-safe. ---- */
rf_word rf_str_intern(const char *s, size_t len);
/* The same with h = rf_str_hash(s, len) already known (rf_strdict hashes
 * every string once, in parallel, and hands the hash on). */
rf_word rf_str_intern_hashed(const char *s, size_t len, uint64_t h);
/* Room for `more` new strings, so that a batch of that many inserts never
 * grows the table midway (each growth re-inserts every string). */
void rf_str_reserve(size_t more);
/* A hint: the slot of hash h is looked up soon (a batch of inserts hides
 * the cache misses of its random slots by asking ahead). */
void rf_str_prefetch(uint64_t h);
/* Hints for a loop over string ids in no particular order (a relation
 * sorted by another column: q13's o_comment by o_custkey): the entry of
 * id (its text's place) and then its first bytes are read soon. Ask for
 * the entry some rows ahead and for the text fewer rows ahead, when the
 * entry has arrived. Ids out of range are ignored. */
void rf_str_prefetch_entry(rf_word id);
void rf_str_prefetch_text(rf_word id);
/* Lookup-only mode for the calling thread (on until turned off): a string
 * not in the dictionary is not added; rf_str_intern returns 0 for it and
 * rf_str_missed() (which clears the flag) says so. Threads in this mode
 * only read the dictionary, so several may evaluate string functions at
 * once while no thread interns (primitives/cuda/prims.c: a tabulated
 * substr over millions of ids on every core, the misses done after, in
 * order, in one thread). */
void rf_str_lookup_only(bool on);
bool rf_str_missed(void);
const char *rf_str_get(rf_word id);      /* NUL-terminated */
size_t rf_str_len(rf_word id);
size_t rf_str_count(void);
/* text[i], len[i] := the text and length of id first + i, for i < n, in
 * one pass over the dictionary's entries (a range of ids tabulated); false,
 * nothing set, where an id is not in the dictionary. */
bool rf_str_texts(rf_word first, size_t n, const char **text, size_t *len);
/* A number that names the dictionary's contents, its strings in id order
 * (two processes that interned the same strings in the same order agree:
 * the distribution layer checks that every rank's ids mean the same). */
uint64_t rf_str_fingerprint(void);
void rf_str_reset(void);                 /* frees everything (tests) */

/* The hash both string dictionaries use: eight bytes a step (the FNV-1a
 * it replaces went a byte a step, which showed in profiles of loading
 * millions of comment strings), then a full avalanche so that the low bits
 * (the slot) and the high bits (the tag kept in the slot) are independent. */
static inline uint64_t rf_str_hash(const char *s, size_t len)
{
    const uint64_t k = 0xbf58476d1ce4e5b9ull;
    uint64_t h = 0x9e3779b97f4a7c15ull ^ ((uint64_t)len * 0xff51afd7ed558ccdull);
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        h = (h ^ w) * k;
        h ^= h >> 31;
    }
    if (i < len) {
        uint64_t w = 0;
        for (size_t j = 0; i + j < len; j++)
            w |= (uint64_t)(unsigned char)s[i + j] << (8 * j);
        h = (h ^ w) * k;
        h ^= h >> 31;
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
}

#endif
