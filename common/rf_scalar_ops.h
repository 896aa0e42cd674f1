/* The scalar operators of compute code, ONE definition for every backend:
 * common/rf_expr.c (rf_scalar_binary / rf_scalar_unary, the CPU backend and
 * the compiler), the GPU interpreter (primitives/cuda/kernels.cu through
 * rf_scalar.cuh) and the NVRTC-generated kernels (codegen.c embeds this
 * file's text after rf_scalar.cuh). Written in the common subset of C11 and
 * CUDA C++ (no headers of its own, so NVRTC can take it as text).
 *
 * Part 1 (always): the fault codes, RF_SERR_*.
 * Part 2 (when the includer defines RF_SOPS_CTX): rf_sops_binary and
 * rf_sops_unary. The includer supplies, before including:
 *   RF_SOPS_CTX                 the type of the context argument
 *   rf_sops_fail(ctx, code, value, aux)   records a fault, returns false
 *   rf_sops_compare(ctx, t, a, b)         typed order of two words (-1/0/1)
 *   uint64_t, int64_t, int32_t, INT32_MIN/MAX, the RF_EX_* and RF_TYPE_*
 *   constants, and trunc, fmod, isfinite.
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
    RF_SERR_BAD_UNARY_OP
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

/* Wraps an int64 result to the width of t. */
RF_HD uint64_t rf_sops_wrap_int(int t, uint64_t v)
{
    if (t == RF_TYPE_INT32)
        return (uint64_t)(int64_t)(int32_t)(uint32_t)v;
    return v;
}

RF_HD bool rf_sops_binary(RF_SOPS_CTX ctx, int op, int t, uint64_t a, uint64_t b, uint64_t *out)
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
    int64_t sx = (int64_t)a, sy = (int64_t)b;
    switch (op) {
    case RF_EX_ADD: *out = rf_sops_wrap_int(t, a + b); return true;
    case RF_EX_SUB: *out = rf_sops_wrap_int(t, a - b); return true;
    case RF_EX_MUL: *out = rf_sops_wrap_int(t, a * b); return true;
    case RF_EX_DIV:
    case RF_EX_MOD:
        if (sy == 0)
            return rf_sops_fail(ctx, RF_SERR_DIV_ZERO, 0, 0);
        if (sy == -1) /* avoids INT64_MIN / -1 overflow; wraps like + */
            *out = op == RF_EX_DIV ? rf_sops_wrap_int(t, 0 - a) : 0;
        else
            *out = rf_sops_wrap_int(t, (uint64_t)(op == RF_EX_DIV ? sx / sy : sx % sy));
        return true;
    default:
        return rf_sops_fail(ctx, RF_SERR_BAD_INT_OP, 0, 0);
    }
}

RF_HD bool rf_sops_unary(RF_SOPS_CTX ctx, int op, int from, int to, uint64_t a, uint64_t *out)
{
    switch (op) {
    case RF_EX_NOT:
        *out = !a;
        return true;
    case RF_EX_NEG:
        if (to == RF_TYPE_FLOAT64)
            *out = rf_sops_from_f(-rf_sops_to_f(a));
        else
            *out = rf_sops_wrap_int(to, 0 - a);
        return true;
    case RF_EX_CAST: {
        bool from_int = from == RF_TYPE_INT32 || from == RF_TYPE_INT64;
        bool to_int = to == RF_TYPE_INT32 || to == RF_TYPE_INT64;
        if (from == to || (from_int && to == RF_TYPE_INT64)) {
            *out = a;
            return true;
        }
        if (from_int && to == RF_TYPE_FLOAT64) {
            *out = rf_sops_from_f(RF_SOPS_I2D(a));
            return true;
        }
        if (from == RF_TYPE_INT64 && to == RF_TYPE_INT32) {
            int64_t v = (int64_t)a;
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
        return rf_sops_fail(ctx, RF_SERR_CONVERT, 0, from | to << 8);
    }
    default:
        return rf_sops_fail(ctx, RF_SERR_BAD_UNARY_OP, 0, 0);
    }
}

#endif
