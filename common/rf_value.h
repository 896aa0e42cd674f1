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

/* Parses text as a value of type t (used for fact files). Returns false on
 * bad syntax or a value out of range; *why explains (static string). */
bool rf_value_parse(rf_type t, const char *text, size_t len, rf_word *out, const char **why);

/* Formats a value for output: ints in decimal, doubles with the shortest
 * representation that reads back exactly, bools as true/false, strings raw.
 * Returns number of chars written (like snprintf). */
int rf_value_format(rf_type t, rf_word w, char *buf, size_t cap);

/* ---- String dictionary: one per process, ids are dense from 0. ---- */
rf_word rf_str_intern(const char *s, size_t len);
const char *rf_str_get(rf_word id);      /* NUL-terminated */
size_t rf_str_len(rf_word id);
size_t rf_str_count(void);
void rf_str_reset(void);                 /* frees everything (tests) */

#endif
