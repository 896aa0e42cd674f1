/* The scalar operators of compute code, ONE definition for every backend:
 * common/rf_expr.c (rf_scalar_binary / rf_scalar_unary, the CPU backend and
 * the compiler), the GPU interpreter (primitives/cuda/kernels.cu through
 * rf_scalar.cuh) and the NVRTC-generated kernels (codegen.c embeds this
 * file's text after rf_scalar.cuh). Written in the common subset of C11 and
 * CUDA C++ (no headers of its own, so NVRTC can take it as text).
 *
 * Part 1 (always): the fault codes, RF_SERR_*.
 * Part 1b (always): calendar and integer helpers (host and device).
 * Part 2 (when the includer defines RF_SOPS_CTX): rf_sops_binary and
 * rf_sops_unary. The includer supplies, before including:
 *   RF_SOPS_CTX                 the type of the context argument
 *   rf_sops_fail(ctx, code, value, aux)   records a fault, returns false
 *   rf_sops_fail2(ctx, code, a, b, aux)   the same with two operand words
 *   rf_sops_compare(ctx, t, a, b)         typed order of two words (-1/0/1)
 *   uint64_t, int64_t, int32_t, INT32_MIN/MAX, INT64_MIN/MAX, the RF_EX_*
 *   and RF_TYPE_* constants (RF_TYPE_DECIMAL0/18 for the decimal range),
 *   and trunc, round, fmod, isfinite.
 * Integer arithmetic is checked, never wrapping (docs/language.md): the
 * checks are plain integer code (no compiler overflow builtins, which the
 * device lacks), so every backend faults on exactly the same operands.
 * String operators (substr, like, ...) need the string dictionary and are
 * not here: rf_scalar_string (rf_expr.c) on the host; the GPU tabulates them
 * per dictionary id or runs the kernel on the host (primitives/cuda).
 * Floating point: the device uses the _rn intrinsics and the host plain
 * IEEE operations, which agree bit for bit (compile the CUDA side with
 * --fmad=false; x86-64 C does not contract a*b+c without -mfma). Error
 * messages are made from the codes by rf_scalar_fail (rf_expr.c) only. */
#ifndef RF_SCALAR_OPS_ENUM_H
#define RF_SCALAR_OPS_ENUM_H
enum {
    RF_SERR_NONE = 0,
    RF_SERR_DIV_ZERO,       /* "division by zero" */
    RF_SERR_FLOAT_OVERFLOW, /* "float64 overflow" */
    RF_SERR_INT32_RANGE,    /* value: the int64 */
    RF_SERR_FLOAT_RANGE,    /* value: the double's bits; aux: target type */
    RF_SERR_CONVERT,        /* aux: from | to << 8 */
    RF_SERR_BAD_FLOAT_OP,
    RF_SERR_BAD_INT_OP,
    RF_SERR_BAD_UNARY_OP,
    /* value, value2: the operand words; aux: op | result type << 8 |
     * first operand's type << 16 (rf_scalar_fail2 prints them). */
    RF_SERR_INT_OVERFLOW,   /* "integer overflow: 3 * 1000000000 does not fit int32" */
    RF_SERR_DEC_OVERFLOW,   /* "decimal overflow: ... does not fit decimal[2]" */
    RF_SERR_DATE_RANGE,     /* "date out of range: 9999-12-31 + 1" */
    RF_SERR_RANGE,          /* a conversion: value: the source word; aux: from | to << 8 */
    RF_SERR_SUBSTR_LENGTH,  /* value: the negative length */
    RF_SERR_HOST_ONLY,      /* aux: the op (a string operator on the device) */
    RF_SERR_TOTAL_RANGE     /* total(): value, value2: the exact sum's low and
                               high words; aux: the result type */
};
#endif

/* Part 1b (always): calendar helpers, integer only, for host and device
 * (rf_value.c parses and formats dates with them, the operators below
 * compute with them). A date is a day number, 0 = 1970-01-01, proleptic
 * Gregorian, years 1..9999 (H. Hinnant's days_from_civil / civil_from_days,
 * exact for every int64 year here). */
#ifndef RF_SCALAR_OPS_CAL_H
#define RF_SCALAR_OPS_CAL_H
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define RF_HDX static __host__ __device__ __forceinline__
#else
#define RF_HDX static inline
#endif
#define RF_DATE_MIN_DAYS (-719162)  /* 0001-01-01 */
#define RF_DATE_MAX_DAYS 2932896    /* 9999-12-31 */

RF_HDX bool rf_cal_leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

RF_HDX int rf_cal_month_days(int64_t y, int m)
{
    return m == 2 ? (rf_cal_leap(y) ? 29 : 28) : (m == 4 || m == 6 || m == 9 || m == 11) ? 30 : 31;
}

/* Day number of y-m-d (m 1..12, d 1..31; not validated). */
RF_HDX int64_t rf_cal_days(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* The calendar date of day number z (|z| well below 2^60). */
RF_HDX void rf_cal_civil(int64_t z, int64_t *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

RF_HDX bool rf_cal_in_range(int64_t days) { return days >= RF_DATE_MIN_DAYS && days <= RF_DATE_MAX_DAYS; }

/* 10^s for s = 0..18. */
RF_HDX int64_t rf_pow10(int s)
{
    int64_t p = 1;
    while (s-- > 0)
        p *= 10;
    return p;
}

/* x * y as a signed int64; false (and *r unset) when it does not fit.
 * A 64 x 64 -> 128 multiply of the magnitudes: on the device the
 * high word from __umul64hi (a few IMADs; the 32-bit halves below cost
 * ~4x the instructions, and a fused scan-and-total such as
 * price * (1 - disc) * (1 + tax) is bound by them); on the host the
 * portable form in 32-bit halves. Same words either way. */
RF_HDX bool rf_mul_i64(int64_t x, int64_t y, int64_t *r)
{
    /* Both within int32 (money, quantities, rates: q01's and pattern (e)'s
     * price * (1 - disc) * (1 + tax)): one 32 x 32 -> 64 multiply, which
     * cannot overflow (|x * y| <= 2^62), instead of the 128-bit product. */
    if (x == (int64_t)(int32_t)x && y == (int64_t)(int32_t)y) {
        *r = (int64_t)(int32_t)x * (int64_t)(int32_t)y;
        return true;
    }
    uint64_t ux = x < 0 ? 0 - (uint64_t)x : (uint64_t)x, uy = y < 0 ? 0 - (uint64_t)y : (uint64_t)y;
#if defined(__CUDA_ARCH__)
    uint64_t hi = __umul64hi(ux, uy), lo = ux * uy;
#else
    uint64_t x0 = ux & 0xffffffffu, x1 = ux >> 32, y0 = uy & 0xffffffffu, y1 = uy >> 32;
    uint64_t p00 = x0 * y0, p01 = x0 * y1, p10 = x1 * y0, p11 = x1 * y1;
    uint64_t mid = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);
    uint64_t hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
    uint64_t lo = (mid << 32) | (p00 & 0xffffffffu);
#endif
    bool neg = (x < 0) != (y < 0);
    uint64_t limit = (uint64_t)1 << 63; /* |INT64_MIN| */
    if (hi != 0 || lo > limit || (lo == limit && !neg))
        return false;
    *r = (int64_t)(neg ? 0 - lo : lo);
    return true;
}

RF_HDX bool rf_type_word_is_decimal(int t) { return t >= RF_TYPE_DECIMAL0 && t <= RF_TYPE_DECIMAL18; }

/* add_months / add_years (op) of date d by n: SQL interval semantics, the
 * day clamped to the last day of the month reached. False when the result
 * leaves 0001-01-01..9999-12-31. */
RF_HDX bool rf_cal_add_months(int64_t d, int64_t n, bool years, int64_t *out)
{
    if (years) {
        if (n > 10000 || n < -10000)
            return false;
        n *= 12;
    }
    if (n > 120000 || n < -120000)
        return false;
    int64_t y;
    int m, day;
    rf_cal_civil(d, &y, &m, &day);
    int64_t tm = y * 12 + (m - 1) + n;
    if (tm < 12 || tm >= 10000 * 12)
        return false;
    int64_t ny = tm / 12;
    int nm = (int)(tm % 12) + 1, dim = rf_cal_month_days(ny, nm);
    *out = rf_cal_days(ny, nm, day < dim ? day : dim);
    return true;
}
#endif

#if defined(RF_SOPS_CTX) && !defined(RF_SCALAR_OPS_FNS)
#define RF_SCALAR_OPS_FNS

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define RF_HD static __device__ __forceinline__
#define RF_SOPS_DADD(x, y) __dadd_rn((x), (y))
#define RF_SOPS_DSUB(x, y) __dsub_rn((x), (y))
#define RF_SOPS_DMUL(x, y) __dmul_rn((x), (y))
#define RF_SOPS_DDIV(x, y) __ddiv_rn((x), (y))
#define RF_SOPS_I2D(v) __ll2double_rn((long long)(v))
RF_HD double rf_sops_to_f(uint64_t w) { return __longlong_as_double((long long)w); }
RF_HD uint64_t rf_sops_bits(double d) { return (uint64_t)__double_as_longlong(d); }
#else
#define RF_HD static inline
#define RF_SOPS_DADD(x, y) ((x) + (y))
#define RF_SOPS_DSUB(x, y) ((x) - (y))
#define RF_SOPS_DMUL(x, y) ((x) * (y))
#define RF_SOPS_DDIV(x, y) ((x) / (y))
#define RF_SOPS_I2D(v) ((double)(int64_t)(v))
RF_HD double rf_sops_to_f(uint64_t w)
{
    double d;
    memcpy(&d, &w, sizeof d);
    return d;
}
RF_HD uint64_t rf_sops_bits(double d)
{
    uint64_t w;
    memcpy(&w, &d, sizeof w);
    return w;
}
#endif

/* -0.0 -> +0.0: equal values must be equal words. */
RF_HD uint64_t rf_sops_from_f(double d)
{
    if (d == 0.0)
        d = 0.0;
    return rf_sops_bits(d);
}

/* Sign-extends the low 32 bits (int32 totals of the aggregate kernels). */
RF_HD uint64_t rf_sops_wrap_int(int t, uint64_t v)
{
    if (t == RF_TYPE_INT32)
        return (uint64_t)(int64_t)(int32_t)(uint32_t)v;
    return v;
}

/* Whether an int64 result r lies in the range of type t: int32, date
 * (0001-01-01..9999-12-31), decimal (symmetric: INT64_MIN is never one). */
RF_HD bool rf_sops_fits(int t, int64_t r)
{
    if (t == RF_TYPE_INT32)
        return r >= INT32_MIN && r <= INT32_MAX;
    if (t == RF_TYPE_DATE)
        return rf_cal_in_range(r);
    if (rf_type_word_is_decimal(t))
        return r != INT64_MIN;
    return true;
}

RF_HD int rf_sops_overflow_code(int t)
{
    return t == RF_TYPE_DATE ? RF_SERR_DATE_RANGE : rf_type_word_is_decimal(t) ? RF_SERR_DEC_OVERFLOW
                                                                                : RF_SERR_INT_OVERFLOW;
}

/* t: the result type, or the operand type of a comparison; at: the first
 * operand's type (for messages, and the date of add_months). */
RF_HD bool rf_sops_binary(RF_SOPS_CTX ctx, int op, int t, int at, uint64_t a, uint64_t b, uint64_t *out)
{
    if (op >= RF_EX_EQ && op <= RF_EX_GE) {
        /* words are canonical: equality is bitwise */
        int c = (op == RF_EX_EQ || op == RF_EX_NE) ? (a == b ? 0 : 1) : rf_sops_compare(ctx, t, a, b);
        bool r;
        switch (op) {
        case RF_EX_EQ: r = c == 0; break;
        case RF_EX_NE: r = c != 0; break;
        case RF_EX_LT: r = c < 0; break;
        case RF_EX_LE: r = c <= 0; break;
        case RF_EX_GT: r = c > 0; break;
        default: r = c >= 0; break;
        }
        *out = r;
        return true;
    }
    if (op == RF_EX_AND) { *out = (a && b); return true; }
    if (op == RF_EX_OR) { *out = (a || b); return true; }
    if (op == RF_EX_ADD_MONTHS || op == RF_EX_ADD_YEARS) {
        int64_t r;
        if (!rf_cal_add_months((int64_t)a, (int64_t)b, op == RF_EX_ADD_YEARS, &r))
            return rf_sops_fail2(ctx, RF_SERR_DATE_RANGE, a, b, op | t << 8 | at << 16);
        *out = (uint64_t)r;
        return true;
    }
    if (t == RF_TYPE_FLOAT64) {
        double x = rf_sops_to_f(a), y = rf_sops_to_f(b), r;
        switch (op) {
        case RF_EX_ADD: r = RF_SOPS_DADD(x, y); break;
        case RF_EX_SUB: r = RF_SOPS_DSUB(x, y); break;
        case RF_EX_MUL: r = RF_SOPS_DMUL(x, y); break;
        case RF_EX_DIV:
            if (y == 0.0)
                return rf_sops_fail(ctx, RF_SERR_DIV_ZERO, 0, 0);
            r = RF_SOPS_DDIV(x, y);
            break;
        case RF_EX_MOD:
            if (y == 0.0)
                return rf_sops_fail(ctx, RF_SERR_DIV_ZERO, 0, 0);
            r = fmod(x, y);
            break;
        default:
            return rf_sops_fail(ctx, RF_SERR_BAD_FLOAT_OP, 0, 0);
        }
        if (!isfinite(r))
            return rf_sops_fail(ctx, RF_SERR_FLOAT_OVERFLOW, 0, 0);
        *out = rf_sops_from_f(r);
        return true;
    }
    /* Signed words: int32 (computed in int64, then range-checked), int64,
     * date +/- days, decimal + - * (operands of + - share the result's
     * scale; * multiplies the words, scale s1 + s2). */
    bool dec = rf_type_word_is_decimal(t);
    if (t != RF_TYPE_INT32 && t != RF_TYPE_INT64 && t != RF_TYPE_DATE && !dec)
        return rf_sops_fail(ctx, RF_SERR_BAD_INT_OP, 0, 0);
    int64_t sx = (int64_t)a, sy = (int64_t)b, r = 0;
    bool ok;
    switch (op) {
    case RF_EX_ADD:
        r = (int64_t)(a + b);
        ok = ((sx ^ r) & (sy ^ r)) >= 0;
        break;
    case RF_EX_SUB:
        r = (int64_t)(a - b);
        ok = ((sx ^ sy) & (sx ^ r)) >= 0;
        break;
    case RF_EX_MUL:
        if (t == RF_TYPE_DATE)
            return rf_sops_fail(ctx, RF_SERR_BAD_INT_OP, 0, 0);
        ok = rf_mul_i64(sx, sy, &r);
        break;
    case RF_EX_DIV:
    case RF_EX_MOD:
        if (t == RF_TYPE_DATE || dec)
            return rf_sops_fail(ctx, RF_SERR_BAD_INT_OP, 0, 0);
        if (sy == 0)
            return rf_sops_fail(ctx, RF_SERR_DIV_ZERO, 0, 0);
        if (sy == -1) { /* INT64_MIN / -1 overflows; x % -1 is 0 */
            ok = op == RF_EX_MOD || sx != INT64_MIN;
            r = op == RF_EX_DIV ? (int64_t)(0 - a) : 0;
        } else {
            ok = true;
            r = op == RF_EX_DIV ? sx / sy : sx % sy;
        }
        break;
    default:
        return rf_sops_fail(ctx, RF_SERR_BAD_INT_OP, 0, 0);
    }
    if (!ok || !rf_sops_fits(t, r))
        return rf_sops_fail2(ctx, rf_sops_overflow_code(t), a, b, op | t << 8 | at << 16);
    *out = (uint64_t)r;
    return true;
}

/* Conversions (RF_EX_CAST). Narrowing is checked; decimal -> fewer
 * fraction digits and float64 -> decimal round half away from zero;
 * decimal and float64 -> int truncate toward zero. */
RF_HD bool rf_sops_cast(RF_SOPS_CTX ctx, int from, int to, uint64_t a, uint64_t *out)
{
    bool from_int = from == RF_TYPE_INT32 || from == RF_TYPE_INT64;
    bool to_int = to == RF_TYPE_INT32 || to == RF_TYPE_INT64;
    bool from_dec = rf_type_word_is_decimal(from), to_dec = rf_type_word_is_decimal(to);
    int64_t v = (int64_t)a, r;
    if (from == to || (from_int && to == RF_TYPE_INT64)) {
        *out = a;
        return true;
    }
    if (from_int && to == RF_TYPE_FLOAT64) {
        *out = rf_sops_from_f(RF_SOPS_I2D(a));
        return true;
    }
    if (from == RF_TYPE_INT64 && to == RF_TYPE_INT32) {
        if (v < INT32_MIN || v > INT32_MAX)
            return rf_sops_fail(ctx, RF_SERR_INT32_RANGE, a, 0);
        *out = a;
        return true;
    }
    if (from == RF_TYPE_FLOAT64 && to_int) {
        double d = trunc(rf_sops_to_f(a));
        double lo = to == RF_TYPE_INT32 ? (double)INT32_MIN : -9223372036854775808.0;
        double hi = to == RF_TYPE_INT32 ? (double)INT32_MAX : 9223372036854775807.0;
        if (!(d >= lo && d < hi + (to == RF_TYPE_INT32 ? 1.0 : 0.0)))
            return rf_sops_fail(ctx, RF_SERR_FLOAT_RANGE, a, to);
        *out = (uint64_t)(int64_t)d;
        return true;
    }
    if ((from_int || from_dec) && to_dec) {
        int s1 = from_dec ? from - RF_TYPE_DECIMAL0 : 0, s2 = to - RF_TYPE_DECIMAL0;
        if (s2 >= s1) {
            if (!rf_mul_i64(v, rf_pow10(s2 - s1), &r) || r == INT64_MIN)
                return rf_sops_fail2(ctx, RF_SERR_RANGE, a, 0, from | to << 8);
        } else {
            int64_t p = rf_pow10(s1 - s2), q = v / p, m = v % p;
            if (m < 0 ? -m >= p - -m : m >= p - m) /* |m| >= p / 2: away from zero */
                q += v < 0 ? -1 : 1;
            r = q;
        }
        *out = (uint64_t)r;
        return true;
    }
    if (from_dec && to_int) {
        r = v / rf_pow10(from - RF_TYPE_DECIMAL0); /* truncates toward zero */
        if (to == RF_TYPE_INT32 && (r < INT32_MIN || r > INT32_MAX))
            return rf_sops_fail2(ctx, RF_SERR_RANGE, a, 0, from | to << 8);
        *out = (uint64_t)r;
        return true;
    }
    if (from_dec && to == RF_TYPE_FLOAT64) {
        double d = RF_SOPS_I2D(a);
        if (from != RF_TYPE_DECIMAL0)
            d = RF_SOPS_DDIV(d, RF_SOPS_I2D(rf_pow10(from - RF_TYPE_DECIMAL0)));
        *out = rf_sops_from_f(d);
        return true;
    }
    if (from == RF_TYPE_FLOAT64 && to_dec) {
        double d = round(RF_SOPS_DMUL(rf_sops_to_f(a), RF_SOPS_I2D(rf_pow10(to - RF_TYPE_DECIMAL0))));
        if (!(d > -9223372036854775808.0 && d < 9223372036854775808.0))
            return rf_sops_fail2(ctx, RF_SERR_RANGE, a, 0, from | to << 8);
        *out = (uint64_t)(int64_t)d;
        return true;
    }
    return rf_sops_fail(ctx, RF_SERR_CONVERT, 0, from | to << 8);
}

RF_HD bool rf_sops_unary(RF_SOPS_CTX ctx, int op, int from, int to, uint64_t a, uint64_t *out)
{
    switch (op) {
    case RF_EX_NOT:
        *out = !a;
        return true;
    case RF_EX_NEG:
        if (to == RF_TYPE_FLOAT64) {
            *out = rf_sops_from_f(-rf_sops_to_f(a));
            return true;
        }
        if ((int64_t)a == INT64_MIN || !rf_sops_fits(to, (int64_t)(0 - a)))
            return rf_sops_fail2(ctx, rf_sops_overflow_code(to), a, 0, op | to << 8 | from << 16);
        *out = 0 - a;
        return true;
    case RF_EX_CAST:
        return rf_sops_cast(ctx, from, to, a, out);
    case RF_EX_YEAR:
    case RF_EX_MONTH:
    case RF_EX_DAY: {
        int64_t y;
        int m, d;
        rf_cal_civil((int64_t)a, &y, &m, &d);
        *out = (uint64_t)(op == RF_EX_YEAR ? y : op == RF_EX_MONTH ? m : d);
        return true;
    }
    case RF_EX_STRLEN:
        return rf_sops_fail(ctx, RF_SERR_HOST_ONLY, 0, op);
    default:
        return rf_sops_fail(ctx, RF_SERR_BAD_UNARY_OP, 0, 0);
    }
}

#endif
