#include "rf_expr.h"
#include "rf_scalar_ops.h" /* the RF_SERR_* codes; the operators below */

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define RF_FIND_AVX2 1
#endif

static rf_expr *node(rf_exop op, rf_type t)
{
    rf_expr *e = rf_calloc(1, sizeof *e);
    e->op = op;
    e->type = t;
    e->index = -1;
    return e;
}

rf_expr *rf_expr_const(rf_type t, rf_word v)
{
    rf_expr *e = node(RF_EX_CONST, t);
    e->value = v;
    return e;
}

rf_expr *rf_expr_leaf(rf_exop op, rf_type t, int index)
{
    rf_expr *e = node(op, t);
    e->index = index;
    return e;
}

rf_expr *rf_expr_unary(rf_exop op, rf_type t, rf_expr *a)
{
    rf_expr *e = node(op, t);
    e->a = a;
    return e;
}

rf_expr *rf_expr_binary(rf_exop op, rf_type t, rf_expr *a, rf_expr *b)
{
    rf_expr *e = node(op, t);
    e->a = a;
    e->b = b;
    return e;
}

rf_expr *rf_expr_ternary(rf_exop op, rf_type t, rf_expr *a, rf_expr *b, rf_expr *c)
{
    rf_expr *e = node(op, t);
    e->a = a;
    e->b = b;
    e->c = c;
    return e;
}

rf_expr *rf_expr_clone(const rf_expr *e)
{
    if (!e)
        return NULL;
    rf_expr *c = rf_malloc(sizeof *c);
    *c = *e;
    c->a = rf_expr_clone(e->a);
    c->b = rf_expr_clone(e->b);
    c->c = rf_expr_clone(e->c);
    return c;
}

void rf_expr_free(rf_expr *e)
{
    if (!e)
        return;
    rf_expr_free(e->a);
    rf_expr_free(e->b);
    rf_expr_free(e->c);
    free(e);
}

bool rf_expr_equal(const rf_expr *a, const rf_expr *b)
{
    if (!a || !b)
        return a == b;
    if (a->op != b->op || a->type != b->type)
        return false;
    if (a->op == RF_EX_CONST && a->value != b->value)
        return false;
    if ((a->op == RF_EX_VAR || a->op == RF_EX_COL || a->op == RF_EX_ROWID) && a->index != b->index)
        return false;
    return rf_expr_equal(a->a, b->a) && rf_expr_equal(a->b, b->b) && rf_expr_equal(a->c, b->c);
}

int rf_expr_arity(rf_exop op)
{
    switch (op) {
    case RF_EX_CONST:
    case RF_EX_VAR:
    case RF_EX_COL:
    case RF_EX_ROWID:
        return 0;
    case RF_EX_NEG:
    case RF_EX_NOT:
    case RF_EX_CAST:
    case RF_EX_YEAR:
    case RF_EX_MONTH:
    case RF_EX_DAY:
    case RF_EX_STRLEN:
    case RF_EX_TO_STRING:
    case RF_EX_TO_NUMBER:
        return 1;
    case RF_EX_IF:
    case RF_EX_SUBSTR:
        return 3;
    default:
        return 2;
    }
}

const char *rf_exop_symbol(rf_exop op)
{
    static const char *const sym[RF_EX_COUNT_] = {
        [RF_EX_CONST] = "const", [RF_EX_VAR] = "var", [RF_EX_COL] = "col", [RF_EX_ROWID] = "rowid",
        [RF_EX_NEG] = "-", [RF_EX_NOT] = "!", [RF_EX_CAST] = "cast",
        [RF_EX_ADD] = "+", [RF_EX_SUB] = "-", [RF_EX_MUL] = "*",
        [RF_EX_DIV] = "/", [RF_EX_MOD] = "%", [RF_EX_EQ] = "=",
        [RF_EX_NE] = "!=", [RF_EX_LT] = "<", [RF_EX_LE] = "<=",
        [RF_EX_GT] = ">", [RF_EX_GE] = ">=", [RF_EX_AND] = "&&", [RF_EX_OR] = "||",
        [RF_EX_IF] = "if", [RF_EX_YEAR] = "year", [RF_EX_MONTH] = "month", [RF_EX_DAY] = "day",
        [RF_EX_ADD_MONTHS] = "add_months", [RF_EX_ADD_YEARS] = "add_years", [RF_EX_SUBSTR] = "substr",
        [RF_EX_STRLEN] = "strlen", [RF_EX_CONCAT] = "concat", [RF_EX_LIKE] = "like",
        [RF_EX_STARTS_WITH] = "starts_with", [RF_EX_ENDS_WITH] = "ends_with", [RF_EX_CONTAINS] = "contains",
        [RF_EX_TO_STRING] = "to_string", [RF_EX_TO_NUMBER] = "to_number",
    };
    return (unsigned)op < RF_EX_COUNT_ ? sym[op] : "?";
}

bool rf_exop_is_comparison(rf_exop op) { return op >= RF_EX_EQ && op <= RF_EX_GE; }

bool rf_exop_is_function(rf_exop op) { return op >= RF_EX_IF && op < RF_EX_COUNT_; }

void rf_expr_visit_leaves(rf_expr *e, void (*fn)(rf_expr *leaf, void *ctx), void *ctx)
{
    if (!e)
        return;
    if (e->op == RF_EX_VAR || e->op == RF_EX_COL)
        fn(e, ctx);
    rf_expr_visit_leaves(e->a, fn, ctx);
    rf_expr_visit_leaves(e->b, fn, ctx);
    rf_expr_visit_leaves(e->c, fn, ctx);
}

int rf_expr_max_index(const rf_expr *e)
{
    if (!e)
        return -1;
    int m = (e->op == RF_EX_VAR || e->op == RF_EX_COL) ? e->index : -1;
    int x = rf_expr_max_index(e->a), y = rf_expr_max_index(e->b), z = rf_expr_max_index(e->c);
    if (x > m) m = x;
    if (y > m) m = y;
    if (z > m) m = z;
    return m;
}

void rf_expr_print(const rf_expr *e, FILE *out, const char *const *var_names)
{
    if (!e) {
        fputs("true", out);
        return;
    }
    char buf[64];
    switch (e->op) {
    case RF_EX_CONST:
        if (e->type == RF_TYPE_STRING) {
            fputc('"', out);
            for (const char *s = rf_str_get(e->value); *s; s++) {
                if (*s == '"' || *s == '\\')
                    fprintf(out, "\\%c", *s);
                else if (*s == '\n')
                    fputs("\\n", out);
                else if (*s == '\t')
                    fputs("\\t", out);
                else
                    fputc(*s, out);
            }
            fputc('"', out);
        } else if (e->type == RF_TYPE_DATE) {
            rf_value_format(e->type, e->value, buf, sizeof buf);
            fprintf(out, "date(\"%s\")", buf);
        } else {
            rf_value_format(e->type, e->value, buf, sizeof buf);
            fputs(buf, out);
        }
        return;
    case RF_EX_VAR:
        if (var_names)
            fputs(var_names[e->index], out);
        else
            fprintf(out, "v%d", e->index);
        return;
    case RF_EX_COL:
        fprintf(out, "$%d", e->index);
        return;
    case RF_EX_ROWID:
        fprintf(out, "rowid(%d)", e->index);
        return;
    case RF_EX_NEG:
    case RF_EX_NOT:
        fputs(rf_exop_symbol(e->op), out);
        rf_expr_print(e->a, out, var_names);
        return;
    case RF_EX_CAST:
        fprintf(out, "%s(", rf_type_name(e->type));
        rf_expr_print(e->a, out, var_names);
        fputc(')', out);
        return;
    default:
        if (rf_exop_is_function(e->op)) {   /* name(a, b, c) */
            fprintf(out, "%s(", rf_exop_symbol(e->op));
            rf_expr_print(e->a, out, var_names);
            if (e->b) {
                fputs(", ", out);
                rf_expr_print(e->b, out, var_names);
            }
            if (e->c) {
                fputs(", ", out);
                rf_expr_print(e->c, out, var_names);
            }
            fputc(')', out);
            return;
        }
        fputc('(', out);
        rf_expr_print(e->a, out, var_names);
        fprintf(out, " %s ", rf_exop_symbol(e->op));
        rf_expr_print(e->b, out, var_names);
        fputc(')', out);
        return;
    }
}

/* ---- Scalar operators: the one definition in rf_scalar_ops.h ---- */

/* An operand of a faulting operator as text, by its type (ints, dates,
 * decimals of `scale`, floats). */
static void operand_text(rf_type t, uint64_t w, char *buf, size_t cap)
{
    if (t == RF_TYPE_DATE || t == RF_TYPE_FLOAT64 || rf_type_is_decimal(t))
        rf_value_format(t, w, buf, cap);
    else
        snprintf(buf, cap, "%" PRId64, (int64_t)w);
}

/* The signed 128-bit integer hi * 2^64 + lo in decimal, with `scale`
 * digits after a point (a total that overflowed its type). */
static void format_int128(uint64_t lo, int64_t hi, int scale, char out[64])
{
    bool neg = hi < 0;
    uint64_t h = (uint64_t)hi, l = lo;
    if (neg) {
        l = ~l + 1;
        h = ~h + (l == 0 ? 1 : 0);
    }
    char digits[48];
    int n = 0;
    do { /* long division of (h, l) by 10, 32 bits at a time */
        uint64_t parts[4] = {h >> 32, h & 0xffffffffu, l >> 32, l & 0xffffffffu}, rem = 0;
        for (int i = 0; i < 4; i++) {
            uint64_t cur = rem << 32 | parts[i];
            parts[i] = cur / 10;
            rem = cur % 10;
        }
        h = parts[0] << 32 | parts[1];
        l = parts[2] << 32 | parts[3];
        digits[n++] = (char)('0' + rem);
    } while (h || l || n <= scale);
    int k = 0;
    if (neg)
        out[k++] = '-';
    for (int i = n - 1; i >= 0; i--) {
        out[k++] = digits[i];
        if (i == scale && scale > 0)
            out[k++] = '.';
    }
    out[k] = '\0';
}

bool rf_scalar_fail2(rf_status *st, int code, uint64_t value, uint64_t value2, int aux)
{
    char x[64], y[64];
    switch (code) {
    case RF_SERR_DIV_ZERO:
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "division by zero");
    case RF_SERR_FLOAT_OVERFLOW:
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "float64 overflow");
    case RF_SERR_INT32_RANGE:
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "value %" PRId64 " out of range for int32", (int64_t)value);
    case RF_SERR_FLOAT_RANGE:
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "value %g out of range for %s", rf_word_to_double(value),
                       rf_type_name((rf_type)aux));
    case RF_SERR_CONVERT:
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "cannot convert %s to %s", rf_type_name((rf_type)(aux & 0xff)),
                       rf_type_name((rf_type)(aux >> 8)));
    case RF_SERR_BAD_FLOAT_OP:
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "bad float operator");
    case RF_SERR_BAD_INT_OP:
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "bad integer operator");
    case RF_SERR_INT_OVERFLOW:
    case RF_SERR_DEC_OVERFLOW:
    case RF_SERR_DATE_RANGE: {
        rf_exop op = (rf_exop)(aux & 0xff);
        rf_type t = (rf_type)((aux >> 8) & 0xff), at = (rf_type)((aux >> 16) & 0xff), bt = t;
        if (at <= RF_TYPE_INVALID || at >= RF_TYPE_COUNT_)
            at = t;
        if (op == RF_EX_MUL && rf_type_is_decimal(t) && rf_type_is_decimal(at) &&
            rf_decimal_scale(t) >= rf_decimal_scale(at))
            bt = rf_type_decimal(rf_decimal_scale(t) - rf_decimal_scale(at)); /* s = s1 + s2 */
        else if (op == RF_EX_ADD_MONTHS || op == RF_EX_ADD_YEARS || code == RF_SERR_DATE_RANGE)
            bt = at == RF_TYPE_DATE ? RF_TYPE_INT64 : RF_TYPE_DATE; /* date + n, n + date */
        operand_text(at, value, x, sizeof x);
        operand_text(bt, value2, y, sizeof y);
        const char *what = code == RF_SERR_INT_OVERFLOW ? "integer overflow" : code == RF_SERR_DEC_OVERFLOW
                                                                                 ? "decimal overflow"
                                                                                 : "date out of range";
        if (code == RF_SERR_DATE_RANGE) {
            if (op == RF_EX_ADD_MONTHS || op == RF_EX_ADD_YEARS)
                return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "%s: %s(%s, %s)", what, rf_exop_symbol(op), x, y);
            return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "%s: %s %s %s", what, x, rf_exop_symbol(op), y);
        }
        if (op == RF_EX_NEG)
            return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "%s: -(%s) does not fit %s", what, x, rf_type_name(t));
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "%s: %s %s %s does not fit %s", what, x, rf_exop_symbol(op), y,
                       rf_type_name(t));
    }
    case RF_SERR_RANGE: {
        rf_type from = (rf_type)(aux & 0xff), to = (rf_type)((aux >> 8) & 0xff);
        operand_text(from, value, x, sizeof x);
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "value %s out of range for %s", x, rf_type_name(to));
    }
    case RF_SERR_SUBSTR_LENGTH:
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "substr: negative length %" PRId64, (int64_t)value);
    case RF_SERR_HOST_ONLY:
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "'%s' cannot run on the device", rf_exop_symbol((rf_exop)aux));
    case RF_SERR_TOTAL_RANGE: {
        rf_type t = (rf_type)aux;
        char sum[64];
        format_int128(value, (int64_t)value2, rf_type_is_decimal(t) ? rf_decimal_scale(t) : 0, sum);
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "%s: the total %s does not fit %s",
                       rf_type_is_decimal(t) ? "decimal overflow" : "integer overflow", sum, rf_type_name(t));
    }
    default:
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "bad unary operator");
    }
}

bool rf_scalar_fail(rf_status *st, int code, uint64_t value, int aux)
{
    return rf_scalar_fail2(st, code, value, 0, aux);
}

#define RF_SOPS_CTX rf_status *
#define rf_sops_fail(st, code, value, aux) rf_scalar_fail((st), (code), (value), (aux))
#define rf_sops_fail2(st, code, a, b, aux) rf_scalar_fail2((st), (code), (a), (b), (aux))
#define rf_sops_compare(st, t, a, b) ((void)(st), rf_value_compare((rf_type)(t), (a), (b)))
#include "rf_scalar_ops.h"

bool rf_scalar_binary(rf_exop op, rf_type t, rf_word a, rf_word b, rf_word *out, rf_status *st)
{
    return rf_sops_binary(st, (int)op, (int)t, (int)t, a, b, out);
}

bool rf_scalar_binary2(rf_exop op, rf_type t, rf_type at, rf_word a, rf_word b, rf_word *out, rf_status *st)
{
    return rf_sops_binary(st, (int)op, (int)t, (int)at, a, b, out);
}

bool rf_scalar_unary(rf_exop op, rf_type from, rf_type to, rf_word a, rf_word *out, rf_status *st)
{
    return rf_sops_unary(st, (int)op, (int)from, (int)to, a, out);
}

/* Whether a[0, n) and b[0, n) are equal, for the short middles of words
 * (a call to memcmp costs more than comparing ten bytes). */
static inline bool same_bytes(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return false;
    return true;
}

/* First occurrence of w (wn > 0 bytes) in s[0, n), or NULL. Where SSE2 is
 * there, 16 places at a time are tested for w's first and last bytes
 * together and only places that have both are compared: TPC-H's comments
 * are ~50 bytes and words like "special" start with common letters, so
 * memchr for the first byte stopped at most of them (q13's like() over
 * 1.5M comments at SF 1: memchr and memcmp were 58% of the time). */
#ifdef RF_FIND_AVX2
/* The same 32 places a step where the CPU has AVX2 (asked at run time:
 * the build targets every x86-64): a run of back-to-back texts
 * (rf_like_run_many) is searched at about twice the bytes a cycle.
 * Needs wn >= 2 and n - wn + 1 >= 32 places. */
__attribute__((target("avx2"))) static const char *find_bytes_avx2(const char *s, size_t n, const char *w, size_t wn)
{
    size_t last = n - wn;
    const __m256i first = _mm256_set1_epi8(w[0]), lastb = _mm256_set1_epi8(w[wn - 1]);
    for (size_t at = 0; at <= last;) {
        size_t step = at + 32 <= last + 1 ? at : last + 1 - 32;
        __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(s + step));
        __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(s + step + wn - 1));
        uint32_t mask = (uint32_t)_mm256_movemask_epi8(_mm256_and_si256(_mm256_cmpeq_epi8(a, first), _mm256_cmpeq_epi8(b, lastb)));
        mask &= ~((1u << (at - step)) - 1);
        while (mask) {
            unsigned bit = (unsigned)__builtin_ctz(mask);
            if (same_bytes(s + step + bit + 1, w + 1, wn - 2))
                return s + step + bit;
            mask &= mask - 1;
        }
        at = step + 32;
    }
    return NULL;
}
#endif

static const char *find_bytes(const char *s, size_t n, const char *w, size_t wn)
{
    if (wn > n)
        return NULL;
    if (wn == 1)
        return memchr(s, w[0], n);
    size_t last = n - wn;   /* the last place w can start */
    size_t i = 0;
#ifdef RF_FIND_AVX2
    if (last + 1 >= 64 && __builtin_cpu_supports("avx2"))
        return find_bytes_avx2(s, n, w, wn);
#endif
#ifdef __SSE2__
    if (wn >= 2) {
        const __m128i first = _mm_set1_epi8(w[0]), lastb = _mm_set1_epi8(w[wn - 1]);
        /* Steps of 16 places; the last step ends at the last place and
         * overlaps the one before (its places already tested masked off). */
        for (size_t at = 0; last + 1 >= 16 && at <= last;) {
            size_t step = at + 16 <= last + 1 ? at : last + 1 - 16;
            __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(s + step));
            __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(s + step + wn - 1));
            unsigned mask = (unsigned)_mm_movemask_epi8(_mm_and_si128(_mm_cmpeq_epi8(a, first), _mm_cmpeq_epi8(b, lastb)));
            mask &= ~((1u << (at - step)) - 1);
            while (mask) {
                unsigned bit = (unsigned)__builtin_ctz(mask);
                if (same_bytes(s + step + bit + 1, w + 1, wn - 2))
                    return s + step + bit;
                mask &= mask - 1;
            }
            at = step + 16;
        }
        if (last + 1 >= 16)
            return NULL;
    }
#endif
    for (; i <= last; i++)
        if (s[i] == w[0] && s[i + wn - 1] == w[wn - 1] && same_bytes(s + i + 1, w + 1, wn > 2 ? wn - 2 : 0))
            return s + i;
    return NULL;
}

/* LIKE with '%' only (TPC-H's '%special%requests%', '%green%'): the runs
 * between the '%'s must occur in order, the first at the start and the
 * last at the end unless a '%' stands there; taking each middle run at
 * its first occurrence after the previous one is never worse. The
 * pattern is taken apart once (rf_like_compile) where many strings meet
 * it: q13's 14.1M comments at SF 10 parsed it again for each. */
bool rf_like_compile(rf_like_pattern *lp, const char *p, size_t m)
{
    memset(lp, 0, sizeof *lp);
    lp->p = p;
    lp->m = m;
    const char *first_pct = memchr(p, '%', m);
    if (!first_pct || memchr(p, '_', m))
        return true;   /* the general matcher (lp->words < 0 below) */
    lp->head = (size_t)(first_pct - p);
    while (lp->tail < m && p[m - 1 - lp->tail] != '%')
        lp->tail++;
    for (size_t j = lp->head; j < m - lp->tail;) {
        while (j < m - lp->tail && p[j] == '%')
            j++;
        size_t k = j;
        while (k < m - lp->tail && p[k] != '%')
            k++;
        if (k > j) {
            if (lp->nwords == RF_LIKE_MAX_WORDS)
                return true;   /* too many: the general matcher */
            lp->word_at[lp->nwords] = j;
            lp->word_len[lp->nwords++] = k - j;
        }
        j = k;
    }
    lp->percent_only = true;
    return true;
}

/* A '%'-only pattern's head and tail against s. */
static bool like_ends(const rf_like_pattern *lp, const char *s, size_t n)
{
    size_t head = lp->head, tail = lp->tail;
    return head + tail <= n && same_bytes(s, lp->p, head) && same_bytes(s + n - tail, lp->p + lp->m - tail, tail);
}

/* Words w and after of a '%'-only pattern, each at its first occurrence
 * from pos on, before the tail. */
static bool like_words(const rf_like_pattern *lp, const char *s, size_t n, int w, size_t pos)
{
    const char *p = lp->p;
    size_t end = n - lp->tail;
    for (; w < lp->nwords; w++) {
        size_t len = lp->word_len[w];
        const char *at = find_bytes(s + pos, end - pos, p + lp->word_at[w], len);
        if (!at)
            return false;
        pos = (size_t)(at - s) + len;
    }
    return true;
}

bool rf_like_run(const rf_like_pattern *lp, const char *s, size_t n)
{
    if (!lp->percent_only)
        return rf_like_general(s, n, lp->p, lp->m);
    return like_ends(lp, s, n) && like_words(lp, s, n, 0, lp->head);
}

/* SQL LIKE over bytes: '%' any run (also empty), '_' one byte, no escape.
 * Greedy with one backtrack point (the last '%'): O(len(s) * len(p)). */
bool rf_like_general(const char *s, size_t n, const char *p, size_t m)
{
    size_t i = 0, j = 0, star = SIZE_MAX, mark = 0;
    while (i < n) {
        if (j < m && p[j] == '%') {
            star = j++;
            mark = i;
        } else if (j < m && (p[j] == '_' || p[j] == s[i])) {
            i++;
            j++;
        } else if (star != SIZE_MAX) {
            j = star + 1;
            i = ++mark;
        } else {
            return false;
        }
    }
    while (j < m && p[j] == '%')
        j++;
    return j == m;
}

/* contains(s, w) as the pattern '%w%'. */
void rf_contains_compile(rf_like_pattern *lp, const char *w, size_t m)
{
    memset(lp, 0, sizeof *lp);
    lp->p = w;
    lp->m = m;
    lp->percent_only = true;
    if (m > 0) {
        lp->word_len[0] = m;
        lp->nwords = 1;
    }
}

/* Texts back to back (a range of ids tabulated: the dictionary keeps the
 * texts of ids interned in a row one after another, each with its NUL) are
 * searched for the pattern's first word as one run of bytes, and only the
 * strings that hold it are matched whole: a search a string pays ~20 ns of
 * setting up for ~50 bytes, one over a run ~2 ns (q13's '%special%requests%'
 * over 14.1M comments at SF 10, 9% of them holding 'special'). The first
 * hit at or after string i's start that ends inside string i is an
 * occurrence in it; one that ends past it means string i holds none (its
 * own would have been found first). */
void rf_like_run_many(const rf_like_pattern *lp, const char *const *text, const size_t *len, size_t n, bool *out)
{
    size_t i = 0;
    while (i < n) {
        size_t j = i + 1;   /* [i, j): texts back to back */
        while (j < n && text[j] == text[j - 1] + len[j - 1] + 1)
            j++;
        if (!lp->percent_only || lp->nwords == 0 || j - i < 4) {
            for (; i < j; i++)
                out[i] = rf_like_run(lp, text[i], len[i]);
            continue;
        }
        const char *w = lp->p + lp->word_at[0], *end = text[j - 1] + len[j - 1], *pos = text[i];
        size_t wn = lp->word_len[0];
        while (i < j) {
            const char *hit = find_bytes(pos, (size_t)(end - pos), w, wn);
            if (!hit) {
                for (; i < j; i++)
                    out[i] = false;
                break;
            }
            while (i < j && hit + wn > text[i] + len[i])
                out[i++] = false;
            if (i == j)
                break;
            if (hit >= text[i]) {   /* inside string i: the first word's first occurrence there */
                size_t at = (size_t)(hit - text[i]);
                if (at < lp->head)   /* (inside the head: search again past it) */
                    out[i] = rf_like_run(lp, text[i], len[i]);
                else
                    out[i] = like_ends(lp, text[i], len[i]) && at + wn <= len[i] - lp->tail &&
                             like_words(lp, text[i], len[i], 1, at + wn);
                i++;
            }
            if (i < j)   /* (a hit that began in the bytes before string i: search i again) */
                pos = text[i];
        }
    }
}

bool rf_like_match(const char *s, size_t n, const char *p, size_t m)
{
    rf_like_pattern lp;
    rf_like_compile(&lp, p, m);
    return rf_like_run(&lp, s, n);
}

/* contains(s, w) for many s (the evaluators' constant w). */
bool rf_contains_bytes(const char *s, size_t n, const char *w, size_t wn)
{
    return wn == 0 || find_bytes(s, n, w, wn) != NULL;
}

/* The bytes [lo, hi) of a string of n bytes that SQL's
 * SUBSTRING(s FROM start FOR len) takes (1-based, clipped); len >= 0. */
static void substr_range(int64_t start, int64_t len, size_t n, size_t *lo, size_t *hi)
{
    /* end = start + len (exclusive, 1-based), saturated */
    int64_t end = (len > 0 && start > INT64_MAX - len) ? INT64_MAX : start + len;
    int64_t a = start < 1 ? 1 : start, b = end;
    if (b > (int64_t)n + 1)
        b = (int64_t)n + 1;
    if (a > (int64_t)n + 1)
        a = (int64_t)n + 1;
    if (b < a)
        b = a;
    *lo = (size_t)(a - 1);
    *hi = (size_t)(b - 1);
}

bool rf_substr_slice(rf_word s, rf_word start, rf_word len, const char **text, size_t *n, rf_status *st)
{
    if ((int64_t)len < 0)
        return rf_scalar_fail(st, RF_SERR_SUBSTR_LENGTH, len, 0);
    size_t lo, hi;
    substr_range((int64_t)start, (int64_t)len, rf_str_len(s), &lo, &hi);
    *text = rf_str_get(s) + lo;
    *n = hi - lo;
    return true;
}

bool rf_scalar_string(rf_exop op, rf_word a, rf_word b, rf_word c, rf_word *out, rf_status *st)
{
    const char *s = rf_str_get(a);
    size_t n = rf_str_len(a);
    switch (op) {
    case RF_EX_STRLEN:
        *out = (rf_word)n;
        return true;
    case RF_EX_SUBSTR: {
        const char *t = NULL;
        size_t len = 0;
        if (!rf_substr_slice(a, b, c, &t, &len, st))
            return false;
        *out = rf_str_intern(t, len);
        return true;
    }
    default:
        break;
    }
    const char *p = rf_str_get(b);
    size_t m = rf_str_len(b);
    switch (op) {
    case RF_EX_CONCAT: {
        char small[256];
        char *buf = n + m <= sizeof small ? small : rf_malloc(n + m);
        memcpy(buf, s, n);
        memcpy(buf + n, p, m);
        *out = rf_str_intern(buf, n + m);
        if (buf != small)
            free(buf);
        return true;
    }
    case RF_EX_LIKE:
        *out = rf_like_match(s, n, p, m);
        return true;
    case RF_EX_STARTS_WITH:
        *out = m <= n && memcmp(s, p, m) == 0;
        return true;
    case RF_EX_ENDS_WITH:
        *out = m <= n && memcmp(s + n - m, p, m) == 0;
        return true;
    case RF_EX_CONTAINS:
        *out = rf_contains_bytes(s, n, p, m);
        return true;
    default:
        return rf_scalar_fail(st, RF_SERR_BAD_INT_OP, 0, 0);
    }
}

bool rf_exop_is_string_op(rf_exop op)
{
    return op == RF_EX_SUBSTR || op == RF_EX_STRLEN || (op >= RF_EX_CONCAT && op <= RF_EX_TO_NUMBER);
}

bool rf_to_string(rf_type from, rf_word a, rf_word *out)
{
    char buf[64];
    int n = rf_value_format(from, a, buf, sizeof buf);
    if (n < 0 || (size_t)n >= sizeof buf)
        n = 0;
    *out = rf_str_intern(buf, (size_t)n);
    return true;
}

bool rf_to_number(rf_word a, rf_word *out, rf_status *st)
{
    const char *s = rf_str_get(a);
    size_t n = rf_str_len(a), i = 0;
    bool neg = n > 0 && s[0] == '-';
    i = n > 0 && (s[0] == '-' || s[0] == '+');
    uint64_t v = 0;
    bool ok = i < n;
    for (; ok && i < n; i++) {
        unsigned d = (unsigned char)s[i] - '0';
        if (d > 9 || v > (UINT64_C(1) << 63) / 10 || v * 10 + d > (UINT64_C(1) << 63) - !neg)
            ok = false;
        else
            v = v * 10 + d;
    }
    if (!ok)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "to_number: '%.*s' is not an integer (int64)",
                       (int)(n > 60 ? 60 : n), s);
    *out = neg ? (rf_word)(0 - v) : (rf_word)v;
    return true;
}

bool rf_expr_eval_at(const rf_expr *e, const rf_word *row, const rf_word *rowids, rf_word *out, rf_status *st)
{
    rf_word a, b, c = 0;
    switch (rf_expr_arity(e->op)) {
    case 0:
        if (e->op == RF_EX_ROWID) {
            if (!rowids)
                return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "internal error: rowid() outside a command");
            *out = rowids[e->index];
            return true;
        }
        *out = e->op == RF_EX_CONST ? e->value : row[e->index];
        return true;
    case 1:
        if (!rf_expr_eval_at(e->a, row, rowids, &a, st))
            return false;
        if (e->op == RF_EX_STRLEN)
            return rf_scalar_string(e->op, a, 0, 0, out, st);
        if (e->op == RF_EX_TO_STRING)
            return rf_to_string(e->a->type, a, out);
        if (e->op == RF_EX_TO_NUMBER)
            return rf_to_number(a, out, st);
        return rf_scalar_unary(e->op, e->a->type, e->type, a, out, st);
    default:
        if (!rf_expr_eval_at(e->a, row, rowids, &a, st))
            return false;
        /* && and || short-circuit so that `y != 0 && x / y > 1` is safe;
         * if(c, x, y) evaluates only the branch taken. */
        if (e->op == RF_EX_AND && !a) { *out = 0; return true; }
        if (e->op == RF_EX_OR && a) { *out = 1; return true; }
        if (e->op == RF_EX_IF)
            return rf_expr_eval_at(a ? e->b : e->c, row, rowids, out, st);
        if (!rf_expr_eval_at(e->b, row, rowids, &b, st))
            return false;
        if (e->c && !rf_expr_eval_at(e->c, row, rowids, &c, st))
            return false;
        if (rf_exop_is_string_op(e->op))
            return rf_scalar_string(e->op, a, b, c, out, st);
        return rf_scalar_binary2(e->op, rf_exop_is_comparison(e->op) ? e->a->type : e->type, e->a->type, a, b,
                                 out, st);
    }
}

bool rf_expr_eval(const rf_expr *e, const rf_word *row, rf_word *out, rf_status *st)
{
    return rf_expr_eval_at(e, row, NULL, out, st);
}
