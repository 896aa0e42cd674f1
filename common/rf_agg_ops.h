/* The arithmetic of avg, ONE definition for every backend: the CPU
 * primitive (primitives/cpu/agg.c) and the CUDA kernels
 * (primitives/cuda/kernels.cu) include this file, so that both compute the
 * same float64 from the same total bit for bit. Written in the common
 * subset of C11 and CUDA C++; the includer provides uint64_t, int64_t and
 * bool.
 *
 * total(e) of integer and decimal[s] words: the exact 128-bit sum of the
 * group's words, which cannot overflow and does not depend on the order of
 * the rows; the result is an error when that sum does not fit the result
 * type (rf_sum128_to_i64, then the type's range), never a wrapped value.
 *
 * avg(e) = total / count in float64:
 *  - integer and decimal[s] arguments: the total is exact (a 128-bit sum of
 *    the scaled words, which cannot overflow), rounded to the nearest
 *    float64 once (rf_sum128_to_double), then divided by count * 10^s when that product
 *    is exact in a double (count <= 2^53 / 10^s), else by count and then by
 *    10^s. So an average that is a short decimal (1.5, 0.25) comes out as
 *    the double nearest to it.
 *  - float64 arguments: the rows' values added one after the other in the
 *    group's row order (the input is sorted: lexicographic order of the
 *    rows' words), exactly as total() adds them, then divided by count.
 * Each step is one IEEE operation rounded to nearest (the device uses the
 * _rn intrinsics), so the backends agree bit for bit. */
#ifndef RF_AGG_OPS_H
#define RF_AGG_OPS_H

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define RF_AGG_HD static __device__ __forceinline__
#define RF_AGG_DADD(x, y) __dadd_rn((x), (y))
#define RF_AGG_DMUL(x, y) __dmul_rn((x), (y))
#define RF_AGG_DDIV(x, y) __ddiv_rn((x), (y))
#define RF_AGG_I2D(v) __ll2double_rn((long long)(v))
#define RF_AGG_U2D(v) __ull2double_rn((unsigned long long)(v))
#define RF_AGG_CLZ64(v) __clzll((long long)(v))
#else
#define RF_AGG_HD static inline
#define RF_AGG_DADD(x, y) ((x) + (y))
#define RF_AGG_DMUL(x, y) ((x) * (y))
#define RF_AGG_DDIV(x, y) ((x) / (y))
#define RF_AGG_I2D(v) ((double)(int64_t)(v))
#define RF_AGG_U2D(v) ((double)(uint64_t)(v))
#define RF_AGG_CLZ64(v) __builtin_clzll((unsigned long long)(v))
#endif

/* A signed 128-bit sum: hi * 2^64 + lo. */
typedef struct rf_sum128 {
    uint64_t lo;
    int64_t hi;
} rf_sum128;

RF_AGG_HD void rf_sum128_add(rf_sum128 *s, int64_t v)
{
    uint64_t lo = s->lo + (uint64_t)v;
    s->hi += (v < 0 ? -1 : 0) + (lo < s->lo ? 1 : 0);
    s->lo = lo;
}

/* The sum rounded to the nearest double (ties to even), like a conversion
 * of the exact integer: beyond 2^64 in magnitude, the top 64 bits with the
 * lower ones ORed into their last bit (which lies below the rounding
 * position, so round-to-nearest-even sees the right sticky bit), converted,
 * then scaled by a power of two (exact). */
RF_AGG_HD double rf_sum128_to_double(rf_sum128 s)
{
    if ((s.hi == 0 && (int64_t)s.lo >= 0) || (s.hi == -1 && (int64_t)s.lo < 0))
        return RF_AGG_I2D((int64_t)s.lo);
    bool neg = s.hi < 0;
    uint64_t lo = s.lo, hi = (uint64_t)s.hi;
    if (neg) {                                /* magnitude: two's complement */
        lo = ~lo + 1;
        hi = ~hi + (lo == 0 ? 1 : 0);
    }
    double d;
    if (hi == 0) {
        d = RF_AGG_U2D(lo);
    } else {
        int k = 64 - RF_AGG_CLZ64(hi);        /* 1..63: |sum| < 2^127 */
        uint64_t top = (hi << (64 - k)) | (lo >> k);
        top |= (lo & (((uint64_t)1 << k) - 1)) != 0 ? 1 : 0;
        d = RF_AGG_DMUL(RF_AGG_U2D(top), RF_AGG_U2D((uint64_t)1 << k));
    }
    return neg ? -d : d;
}

/* The sum as an int64, if it is one (then *out is set). */
RF_AGG_HD bool rf_sum128_to_i64(rf_sum128 s, int64_t *out)
{
    if ((s.hi == 0 && (int64_t)s.lo >= 0) || (s.hi == -1 && (int64_t)s.lo < 0)) {
        *out = (int64_t)s.lo;
        return true;
    }
    return false;
}

/* Adds b into a (both 128-bit sums). */
RF_AGG_HD void rf_sum128_merge(rf_sum128 *a, rf_sum128 b)
{
    uint64_t lo = a->lo + b.lo;
    a->hi += b.hi + (lo < a->lo ? 1 : 0);
    a->lo = lo;
}

/* avg of `count` (>= 1) integer or decimal[scale] words summing to s. */
RF_AGG_HD double rf_avg_exact(rf_sum128 s, uint64_t count, int scale)
{
    double sum = rf_sum128_to_double(s), c = RF_AGG_U2D(count);
    if (scale <= 0)
        return RF_AGG_DDIV(sum, c);
    uint64_t p = 1;
    for (int i = 0; i < scale; i++)
        p *= 10;                  /* scale <= 18: exact, and exact as a double */
    double pd = RF_AGG_U2D(p);
    if (count <= ((uint64_t)1 << 53) / p)
        return RF_AGG_DDIV(sum, RF_AGG_DMUL(c, pd));
    return RF_AGG_DDIV(RF_AGG_DDIV(sum, c), pd);
}

/* avg of `count` (>= 1) float64 values whose in-order sum is sum. */
RF_AGG_HD double rf_avg_float(double sum, uint64_t count)
{
    return RF_AGG_DDIV(sum, RF_AGG_U2D(count));
}

#endif
