/* Scalar expression trees, shared by the checked program (where leaves
 * name rule variables) and the query plan (where leaves name input
 * columns). The Harmony IR flattens them to postfix code (hir.h).
 *
 * Semantics, identical on every backend:
 *  - int32 and int64 + - * / % and unary - are checked, never wrapping: a
 *    result outside the type's range is the run-time error "integer
 *    overflow: 3 * 1000000000 does not fit int32" (INT_MIN / -1 too;
 *    INT_MIN % -1 = 0).
 *  - integer / and % by zero is a run-time error ("division by zero");
 *    / truncates toward zero, % has the sign of the dividend (as in C).
 *  - float64 division by zero and overflow are run-time errors too (so
 *    NaN/inf never enter relations).
 *  - decimal[s] words are value * 10^s: + - take operands of the result's
 *    scale (the front end aligns them with CASTs), * multiplies the words
 *    (scale s1 + s2); |result| >= 2^63 is "decimal overflow: ...".
 *  - date + n, n + date, date - n (days, result type date) leaving
 *    0001-01-01..9999-12-31 is "date out of range: ..."; date - date is an
 *    int64 (the operands' types are in the instruction's arg_type / the
 *    tree).
 *  - comparisons on strings compare text (bytewise, like strcmp); dates
 *    and decimals (of one scale) compare as signed int64.
 *  - CAST converts between numeric types: int->float exact where possible,
 *    float->int and decimal->int truncate toward zero; decimal[s1] ->
 *    decimal[s2] with s2 < s1 and float->decimal round half away from
 *    zero; out-of-range is a run-time error ("value X out of range for T").
 *  - IF evaluates only the branch taken; && and || short-circuit.
 *  - string functions follow SQL (substr 1-based and clipped, negative
 *    length an error; like with % and _, no escape) and intern their string
 *    results in the dictionary (rf_scalar_string). */
#ifndef RF_EXPR_H
#define RF_EXPR_H

#include "rf_diag.h"
#include "rf_value.h"

typedef enum rf_exop {
    RF_EX_CONST,   /* value (encoded word) of type `type` */
    RF_EX_VAR,     /* rule variable `index` (checked program only) */
    RF_EX_COL,     /* input column `index` (plan and later) */
    RF_EX_ROWID,   /* int64: position of the current row in input `index`
                      (0 or 1; plan MAPFILTER/MAPJOIN only). The planner's
                      row identity for count/total/avg bodies, so that they
                      can drop columns without merging rows (plan_build.c) */
    RF_EX_NEG,     /* -a */
    RF_EX_NOT,     /* !a (bool) */
    RF_EX_CAST,    /* a converted to `type` */
    RF_EX_ADD, RF_EX_SUB, RF_EX_MUL, RF_EX_DIV, RF_EX_MOD,
    RF_EX_EQ, RF_EX_NE, RF_EX_LT, RF_EX_LE, RF_EX_GT, RF_EX_GE,
    RF_EX_AND, RF_EX_OR,
    /* Business-query functions (docs/language.md, "Functions"): */
    RF_EX_IF,          /* a ? b : c; b only where a holds, c only where not */
    RF_EX_YEAR, RF_EX_MONTH, RF_EX_DAY,       /* date -> int32 */
    RF_EX_ADD_MONTHS, RF_EX_ADD_YEARS,        /* date, int -> date */
    RF_EX_SUBSTR,      /* string, int start (1-based), int len -> string */
    RF_EX_STRLEN,      /* string -> int64 (bytes) */
    RF_EX_CONCAT,      /* string, string -> string */
    RF_EX_LIKE,        /* string, pattern -> bool (SQL LIKE: % and _) */
    RF_EX_STARTS_WITH, RF_EX_ENDS_WITH, RF_EX_CONTAINS, /* string, string -> bool */
    RF_EX_TO_STRING,   /* number -> string: its text as outputs write it */
    RF_EX_TO_NUMBER,   /* string -> int64: a decimal integer, else a fault */
    RF_EX_COUNT_
} rf_exop;

typedef struct rf_expr {
    rf_exop op;
    rf_type type;        /* result type */
    rf_word value;       /* RF_EX_CONST */
    int index;           /* RF_EX_VAR / RF_EX_COL / RF_EX_ROWID */
    struct rf_expr *a, *b, *c;   /* operands; c only for arity 3 (IF, SUBSTR) */
    rf_loc loc;
} rf_expr;

rf_expr *rf_expr_const(rf_type t, rf_word v);
rf_expr *rf_expr_leaf(rf_exop op, rf_type t, int index); /* VAR, COL or ROWID */
rf_expr *rf_expr_unary(rf_exop op, rf_type t, rf_expr *a);
rf_expr *rf_expr_binary(rf_exop op, rf_type t, rf_expr *a, rf_expr *b);
rf_expr *rf_expr_ternary(rf_exop op, rf_type t, rf_expr *a, rf_expr *b, rf_expr *c);
rf_expr *rf_expr_clone(const rf_expr *e);
void rf_expr_free(rf_expr *e);
bool rf_expr_equal(const rf_expr *a, const rf_expr *b);   /* structural */
int rf_expr_arity(rf_exop op);                            /* 0, 1, 2 or 3 */
const char *rf_exop_symbol(rf_exop op);                   /* "+", "<=", ... */
bool rf_exop_is_comparison(rf_exop op);
bool rf_exop_is_function(rf_exop op);   /* written name(args): IF and after */
/* to_string: a number's text as outputs write it (rf_value_format),
 * interned; to_number: a string of an optional sign and decimal digits as
 * int64, a fault otherwise ("to_number: 'x' is not an integer"). Host
 * only (the dictionary lives there). */
bool rf_to_string(rf_type from, rf_word a, rf_word *out);
bool rf_to_number(rf_word a, rf_word *out, rf_status *st);

/* Calls fn on every VAR/COL leaf (e.g. to collect or renumber columns). */
void rf_expr_visit_leaves(rf_expr *e, void (*fn)(rf_expr *leaf, void *ctx), void *ctx);
/* Highest VAR/COL index used, or -1. */
int rf_expr_max_index(const rf_expr *e);

/* Appends a readable form to a buffer: columns as $0, $1, vars as v0 unless
 * names are given, strings quoted. */
void rf_expr_print(const rf_expr *e, FILE *out, const char *const *var_names);

/* Evaluates one expression over one row of words (index = column/var).
 * Returns false and fills st on a run-time fault. Used by the CPU backend's
 * slow path and by constant folding. */
bool rf_expr_eval(const rf_expr *e, const rf_word *row, rf_word *out, rf_status *st);
/* The same where RF_EX_ROWID k reads rowids[k] (the row's position in the
 * command's input k); rf_expr_eval fails on RF_EX_ROWID. */
bool rf_expr_eval_at(const rf_expr *e, const rf_word *row, const rf_word *rowids, rf_word *out, rf_status *st);

/* The scalar operators themselves, shared by the tree evaluator above and
 * the CPU backend's vectorised evaluator, so both agree bit for bit.
 * `t` is the operand type (for comparisons) or the result type. */
bool rf_scalar_binary(rf_exop op, rf_type t, rf_word a, rf_word b, rf_word *out, rf_status *st);
/* The same with the first operand's type `at` (an instruction's arg_type),
 * which overflow messages and date arithmetic print by. */
bool rf_scalar_binary2(rf_exop op, rf_type t, rf_type at, rf_word a, rf_word b, rf_word *out, rf_status *st);
bool rf_scalar_unary(rf_exop op, rf_type from, rf_type to, rf_word a, rf_word *out, rf_status *st);
/* The string operators (host only: they read and intern dictionary
 * strings): STRLEN (a), SUBSTR (a, b = start, c = len), CONCAT, LIKE,
 * STARTS_WITH, ENDS_WITH, CONTAINS (a, b). */
bool rf_scalar_string(rf_exop op, rf_word a, rf_word b, rf_word c, rf_word *out, rf_status *st);
bool rf_exop_is_string_op(rf_exop op);   /* the ops rf_scalar_string takes */
/* SQL LIKE of s against pattern p ('%' any run, '_' one byte). */
bool rf_like_match(const char *s, size_t n, const char *p, size_t m);
/* The same with the pattern taken apart once, for many strings (the
 * evaluators' constant patterns): rf_like_compile then rf_like_run on
 * each. A pattern of '%' and up to RF_LIKE_MAX_WORDS words between them
 * searches each word in turn; any other (with '_', or none '%') runs
 * rf_like_general. lp keeps p, which must outlive it. */
#define RF_LIKE_MAX_WORDS 8
typedef struct rf_like_pattern {
    const char *p;
    size_t m;
    bool percent_only;                 /* '%' and words only: the word search */
    size_t head, tail;                 /* bytes the string must start / end with */
    int nwords;                        /* the words between, in order */
    size_t word_at[RF_LIKE_MAX_WORDS], word_len[RF_LIKE_MAX_WORDS];
} rf_like_pattern;
bool rf_like_compile(rf_like_pattern *lp, const char *p, size_t m);
bool rf_like_run(const rf_like_pattern *lp, const char *s, size_t n);
bool rf_like_general(const char *s, size_t n, const char *p, size_t m);
/* contains(s, w) as a pattern for rf_like_run ('%w%'); lp keeps w. */
void rf_contains_compile(rf_like_pattern *lp, const char *w, size_t m);
/* out[i] := rf_like_run(lp, text[i], len[i]) for i < n, where texts that
 * lie back to back in memory (each followed by one byte, its NUL, and the
 * next) are searched as one run of bytes. */
void rf_like_run_many(const rf_like_pattern *lp, const char *const *text, const size_t *len, size_t n, bool *out);
/* contains(s, w): w occurs in s (an empty w always). */
bool rf_contains_bytes(const char *s, size_t n, const char *w, size_t wn);
/* The bytes substr(s, start, len) takes, without interning them (the
 * evaluators compare them with a constant directly); fails as substr
 * does on a negative length. */
bool rf_substr_slice(rf_word s, rf_word start, rf_word len, const char **text, size_t *n, rf_status *st);
/* The message of a scalar fault (an RF_SERR_* code of rf_scalar_ops.h, its
 * value and aux): every backend reports faults through this. Returns false. */
bool rf_scalar_fail(rf_status *st, int code, uint64_t value, int aux);
/* The same for faults with two operand words (overflow: value, value2). */
bool rf_scalar_fail2(rf_status *st, int code, uint64_t value, uint64_t value2, int aux);

#endif
