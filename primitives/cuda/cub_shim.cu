// The one place that uses CUB: thin extern "C" wrappers with the two-phase
// temp-storage protocol folded in (temp storage is the context's scratch,
// safe to reuse because all work is ordered on one stream).
#include "cuda_internal.h"

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_segmented_reduce.cuh>
#include <cub/device/device_select.cuh>
#include <cuda/std/functional>

namespace {

struct AddU64 {
    __host__ __device__ uint64_t operator()(uint64_t a, uint64_t b) const { return a + b; }
};

// Typed min/max for the segmented reduce (rf_value_compare's order).
struct TypedMinMax {
    int kind;
    const uint32_t *rank;
    uint64_t nrank;

    __device__ int cmp(uint64_t a, uint64_t b) const
    {
        switch (kind) {
        case RF_RED_MIN_I64:
        case RF_RED_MAX_I64: {
            int64_t x = (int64_t)a, y = (int64_t)b;
            return (x > y) - (x < y);
        }
        case RF_RED_MIN_F64:
        case RF_RED_MAX_F64: {
            double x = __longlong_as_double((long long)a), y = __longlong_as_double((long long)b);
            return (x > y) - (x < y);
        }
        case RF_RED_MIN_STR:
        case RF_RED_MAX_STR: {
            if (a == b)
                return 0;
            uint64_t x = a < nrank ? rank[a] : a, y = b < nrank ? rank[b] : b;
            return (x > y) - (x < y);
        }
        default:
            return (a > b) - (a < b);
        }
    }
    __device__ uint64_t operator()(uint64_t a, uint64_t b) const
    {
        // Segments are never empty, so the initial value (identity() below)
        // only has to lose to every real value. For string maximum no id
        // is below all others; UINT64_MAX (never an id) stands for "none".
        if (kind == RF_RED_MAX_STR) {
            if (a == ~0ull)
                return b;
            if (b == ~0ull)
                return a;
        }
        bool is_min = kind == RF_RED_MIN_I64 || kind == RF_RED_MIN_U64 ||
                      kind == RF_RED_MIN_F64 || kind == RF_RED_MIN_STR;
        int c = cmp(a, b);
        return is_min ? (c <= 0 ? a : b) : (c >= 0 ? a : b);
    }
    uint64_t identity() const
    {
        switch (kind) {
        case RF_RED_MIN_I64: return (uint64_t)INT64_MAX;
        case RF_RED_MAX_I64: return (uint64_t)INT64_MIN;
        case RF_RED_MIN_U64: return ~0ull;
        case RF_RED_MAX_U64: return 0;
        case RF_RED_MIN_F64: return 0x7ff0000000000000ull; /* +inf; values are finite */
        case RF_RED_MAX_F64: return 0xfff0000000000000ull; /* -inf */
        default: return ~0ull; /* strings: ranks are < 2^32 */
        }
    }
};

} // namespace

#define CUB_TWO_PHASE(call)                                                            \
    do {                                                                               \
        size_t tmp_bytes_ = 0;                                                         \
        void *tmp_ = nullptr;                                                          \
        if (!rf_cuda_check(c, (call), "cub", st))                                      \
            return false;                                                              \
        tmp_ = rf_cuda_scratch(c, tmp_bytes_ ? tmp_bytes_ : 1, st);                    \
        if (!tmp_)                                                                     \
            return false;                                                              \
        if (!rf_cuda_check(c, (call), "cub", st))                                      \
            return false;                                                              \
    } while (0)

extern "C" {

bool rf_cub_sort_pairs(rf_cuda_ctx *c, uint64_t *keys, uint64_t *keys_alt, uint32_t *vals,
                       uint32_t *vals_alt, size_t n, int end_bit, rf_status *st)
{
    if (n <= 1 || end_bit <= 0)
        return true;
    cub::DoubleBuffer<uint64_t> k(keys, keys_alt);
    cub::DoubleBuffer<uint32_t> v(vals, vals_alt);
    CUB_TWO_PHASE(cub::DeviceRadixSort::SortPairs(tmp_, tmp_bytes_, k, v, (int64_t)n, 0, end_bit,
                                                  c->stream));
    if (k.Current() != keys &&
        !rf_cuda_check(c, cudaMemcpyAsync(keys, k.Current(), n * 8, cudaMemcpyDeviceToDevice,
                                          c->stream), "sort", st))
        return false;
    if (v.Current() != vals &&
        !rf_cuda_check(c, cudaMemcpyAsync(vals, v.Current(), n * 4, cudaMemcpyDeviceToDevice,
                                          c->stream), "sort", st))
        return false;
    return true;
}

bool rf_cub_sort_pairs32(rf_cuda_ctx *c, uint32_t *keys, uint32_t *keys_alt, uint32_t *vals, uint32_t *vals_alt,
                         size_t n, int end_bit, uint32_t **keys_out, uint32_t **vals_out, rf_status *st)
{
    cub::DoubleBuffer<uint32_t> k(keys, keys_alt);
    cub::DoubleBuffer<uint32_t> v(vals, vals_alt);
    if (n > 1 && end_bit > 0)
        CUB_TWO_PHASE(cub::DeviceRadixSort::SortPairs(tmp_, tmp_bytes_, k, v, (int64_t)n, 0, end_bit,
                                                      c->stream));
    *keys_out = k.Current();
    *vals_out = v.Current();
    return true;
}

bool rf_cub_sort_keys(rf_cuda_ctx *c, uint64_t *keys, uint64_t *keys_alt, size_t n, int end_bit,
                      rf_status *st)
{
    if (n <= 1 || end_bit <= 0)
        return true;
    cub::DoubleBuffer<uint64_t> k(keys, keys_alt);
    CUB_TWO_PHASE(
        cub::DeviceRadixSort::SortKeys(tmp_, tmp_bytes_, k, (int64_t)n, 0, end_bit, c->stream));
    if (k.Current() != keys &&
        !rf_cuda_check(c, cudaMemcpyAsync(keys, k.Current(), n * 8, cudaMemcpyDeviceToDevice,
                                          c->stream), "sort", st))
        return false;
    return true;
}

bool rf_cub_sort_unique_keys(rf_cuda_ctx *c, uint64_t *keys, uint64_t *keys_alt, size_t n,
                             int end_bit, unsigned long long *count_dev, uint64_t **out,
                             rf_status *st)
{
    cub::DoubleBuffer<uint64_t> k(keys, keys_alt);
    if (n > 1 && end_bit > 0)
        CUB_TWO_PHASE(cub::DeviceRadixSort::SortKeys(tmp_, tmp_bytes_, k, (int64_t)n, 0, end_bit,
                                                     c->stream));
    // The distinct keys go to the buffer the sort did not end in: no copy
    // back, and no per-row flags or positions (17 bytes a row fewer).
    *out = k.Alternate();
    CUB_TWO_PHASE(cub::DeviceSelect::Unique(tmp_, tmp_bytes_, k.Current(), k.Alternate(),
                                            count_dev, (int64_t)n, c->stream));
    return true;
}

bool rf_cub_flag_scan(rf_cuda_ctx *c, const uint8_t *flags, uint64_t *pos, size_t n,
                      rf_status *st)
{
    // The explicit 64-bit initial value makes the accumulator 64-bit.
    if (n == 0)
        return rf_cuda_check(c, cudaMemsetAsync(pos, 0, 8, c->stream), "scan", st);
    CUB_TWO_PHASE(cub::DeviceScan::ExclusiveScan(tmp_, tmp_bytes_, flags, pos, AddU64{},
                                                 (uint64_t)0, (int64_t)n, c->stream));
    // pos[n] = pos[n-1] + flags[n-1]: the total, read back by the caller.
    return rf_cuda_check(c, rf_k_scan_tail(c->stream, flags, pos, n), "scan", st);
}

bool rf_cub_count_scan(rf_cuda_ctx *c, const uint64_t *counts, uint64_t *out, size_t n,
                       rf_status *st)
{
    if (n == 0)
        return rf_cuda_check(c, cudaMemsetAsync(out, 0, 8, c->stream), "scan", st);
    CUB_TWO_PHASE(cub::DeviceScan::InclusiveScan(tmp_, tmp_bytes_, counts, out + 1, AddU64{},
                                                 (int64_t)n, c->stream));
    return rf_cuda_check(c, cudaMemsetAsync(out, 0, 8, c->stream), "scan", st);
}

bool rf_cub_max(rf_cuda_ctx *c, const uint64_t *in, size_t n, uint64_t *out_dev, rf_status *st)
{
    if (n == 0)
        return rf_cuda_check(c, cudaMemsetAsync(out_dev, 0, 8, c->stream), "max", st);
    CUB_TWO_PHASE(cub::DeviceReduce::Reduce(tmp_, tmp_bytes_, in, out_dev, (int64_t)n,
                                            cuda::maximum<uint64_t>{}, (uint64_t)0, c->stream));
    return true;
}

bool rf_cub_segmented_reduce(rf_cuda_ctx *c, int kind, const uint64_t *vals, size_t nsegs,
                             const uint64_t *starts, uint64_t *out, rf_status *st)
{
    if (nsegs == 0)
        return true;
    TypedMinMax op{kind, c->rank, (uint64_t)c->nrank};
    CUB_TWO_PHASE(cub::DeviceSegmentedReduce::Reduce(tmp_, tmp_bytes_, vals, out, (int64_t)nsegs,
                                                     starts, starts + 1, op,
                                                     op.identity(), c->stream));
    return true;
}

} // extern "C"
