// The device side of the scalar operators of compute code. The operators
// themselves are common/rf_scalar_ops.h, the one definition the CPU backend
// (common/rf_expr.c) uses too; this file gives them their device context:
// the string order, the fault slot, and typed comparison. Shared, as text, by
// the interpreter (kernels.cu) and the NVRTC-generated kernels (codegen.c
// embeds this file followed by rf_scalar_ops.h). It needs uint64_t & co.,
// the RF_EX_* / RF_TYPE_* / RF_SERR_* constants, RF_DOP_LOOKUP, RF_TAB_BITS, INT32_MIN/MAX
// and a struct RfErr
// {int code; int aux; uint64_t value, value2;} from its includer.
// Compile with --fmad=false: a*b+c must not fuse.

// Where a kernel finds the string order and reports its first fault.
struct RfEnv {
    const uint32_t *rank;
    uint64_t nrank;
    RfErr *err;
    const uint64_t *tab; // string tables (RF_DOP_LOOKUP), see prims.c
};

__device__ bool fail2(RfErr *err, int code, uint64_t value, uint64_t value2, int aux)
{
    if (atomicCAS(&err->code, 0, code) == 0) {
        err->value = value;
        err->value2 = value2;
        err->aux = aux;
    }
    return false;
}

__device__ bool fail(RfErr *err, int code, uint64_t value, int aux) { return fail2(err, code, value, 0, aux); }

__device__ __forceinline__ int str_rank_cmp(const RfEnv &p, uint64_t a, uint64_t b)
{
    uint64_t x = a < p.nrank ? p.rank[a] : a;
    uint64_t y = b < p.nrank ? p.rank[b] : b;
    return (x > y) - (x < y);
}

__device__ int value_compare(const RfEnv &p, int t, uint64_t a, uint64_t b)
{
    if (t == RF_TYPE_INT32 || t == RF_TYPE_INT64 || t == RF_TYPE_DATE ||
        (t >= RF_TYPE_DECIMAL0 && t <= RF_TYPE_DECIMAL18)) { // signed words
        int64_t x = (int64_t)a, y = (int64_t)b;
        return (x > y) - (x < y);
    }
    switch (t) {
    case RF_TYPE_FLOAT64: {
        double x = __longlong_as_double((long long)a), y = __longlong_as_double((long long)b);
        return (x > y) - (x < y);
    }
    case RF_TYPE_STRING:
        if (a == b)
            return 0;
        return str_rank_cmp(p, a, b);
    default:
        return (a > b) - (a < b);
    }
}

// A tabulated string subexpression (table k): its value for dictionary id
// `id`. The tables' heads: tab[2k] offset, tab[2k+1] length, with
// RF_TAB_BITS set where the table holds a bit per id (a boolean's).
__device__ __forceinline__ bool rf_lookup(const RfEnv &p, uint64_t k, uint64_t id, uint64_t *out)
{
    uint64_t len = p.tab[2 * k + 1];
    bool bits = (len & RF_TAB_BITS) != 0;
    if (id >= (len & ~RF_TAB_BITS))
        return fail(p.err, RF_SERR_HOST_ONLY, 0, RF_DOP_LOOKUP);
    uint64_t w = p.tab[p.tab[2 * k] + (bits ? id >> 6 : id)];
    *out = bits ? (w >> (id & 63)) & 1 : w;
    return true;
}

#define RF_SOPS_CTX const RfEnv &
#define rf_sops_fail(p, code, value, aux) fail((p).err, (code), (value), (aux))
#define rf_sops_fail2(p, code, a, b, aux) fail2((p).err, (code), (a), (b), (aux))
#define rf_sops_compare(p, t, a, b) value_compare((p), (t), (a), (b))
#ifndef __CUDACC_RTC__
#include "../../common/rf_scalar_ops.h"
#endif
