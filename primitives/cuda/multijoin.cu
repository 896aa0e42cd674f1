// The breadth-first leapfrog triejoin's kernels (thesis ch. 5, adapted to
// the H100): each level extends every partial binding by the values of
// the next variable that every input taking part holds. A warp takes one
// binding: its lanes walk the shortest input's range 32 values at a time
// and look each value up in the other ranges by binary search (the
// "unprocessed x processed" case of the thesis: the small side searched in
// the large); counts first, then, after a scan, each warp writes its
// extensions in place (ballot + popc give every lane its slot). The
// inputs' ranges are found again by binary search on the binding's values
// rather than stored: (2 x inputs) words a binding saved, and the searches
// run over L2-resident upper levels of the sorted columns.
#include "multijoin.h"

namespace {

constexpr int kBlock = 256;

inline unsigned grid_for(uint64_t n)
{
    uint64_t g = (n + kBlock - 1) / kBlock;
    if (g < 1)
        g = 1;
    if (g > 65535u * 16u)
        g = 65535u * 16u;
    return (unsigned)g;
}

__device__ __forceinline__ uint64_t lower(const uint64_t *col, uint64_t lo, uint64_t hi, uint64_t v)
{
    while (lo < hi) {
        uint64_t m = lo + (hi - lo) / 2;
        if (col[m] < v)
            lo = m + 1;
        else
            hi = m;
    }
    return lo;
}

__device__ __forceinline__ uint64_t upper(const uint64_t *col, uint64_t lo, uint64_t hi, uint64_t v)
{
    while (lo < hi) {
        uint64_t m = lo + (hi - lo) / 2;
        if (col[m] <= v)
            lo = m + 1;
        else
            hi = m;
    }
    return lo;
}

// The range of input x's rows that agree with binding `row` on the columns
// before the level's one.
__device__ __forceinline__ void range_of(const rf_mj_level &lv, int x, const rf_mj_rows &in, uint64_t row,
                                         uint64_t *lo_out, uint64_t *hi_out)
{
    uint64_t lo = 0, hi = lv.nrows[x];
    for (int j = 0; j < lv.col[x] && lo < hi; j++) {
        uint64_t v = in.data[(uint64_t)lv.prefix_var[x][j] * in.cap + row];
        lo = lower(lv.cols[x][j], lo, hi, v);
        hi = upper(lv.cols[x][j], lo, hi, v);
    }
    *lo_out = lo;
    *hi_out = hi;
}

// Whether value v, found at position j of the driver's range [dlo, dhi),
// is a new value there and lies in every other input's range.
__device__ __forceinline__ bool member(const rf_mj_level &lv, int drv, const uint64_t *lo, const uint64_t *hi,
                                       uint64_t j, uint64_t dlo, uint64_t v)
{
    const uint64_t *dcol = lv.cols[drv][lv.col[drv]];
    if (j > dlo && dcol[j - 1] == v)
        return false;   // a later column of the driver repeats the value
    for (int x = 0; x < lv.npart; x++) {
        if (x == drv)
            continue;
        const uint64_t *col = lv.cols[x][lv.col[x]];
        uint64_t p = lower(col, lo[x], hi[x], v);
        if (p >= hi[x] || col[p] != v)
            return false;
    }
    return true;
}

__global__ void k_first(rf_mj_level lv, int drv, uint8_t *flags)
{
    uint64_t lo[RF_MULTIJOIN_MAX_IN], hi[RF_MULTIJOIN_MAX_IN];
    for (int x = 0; x < lv.npart; x++) {
        lo[x] = 0;
        hi[x] = lv.nrows[x];
    }
    const uint64_t *dcol = lv.cols[drv][0];
    for (uint64_t j = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; j < lv.nrows[drv];
         j += (uint64_t)gridDim.x * blockDim.x)
        flags[j] = member(lv, drv, lo, hi, j, 0, dcol[j]);
}

__global__ void k_first_write(rf_mj_level lv, int drv, const uint8_t *flags, const uint64_t *pos, uint64_t *out)
{
    const uint64_t *dcol = lv.cols[drv][0];
    for (uint64_t j = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; j < lv.nrows[drv];
         j += (uint64_t)gridDim.x * blockDim.x)
        if (flags[j])
            out[pos[j]] = dcol[j];
}

// One warp per binding (grid-stride over bindings). With `write`, the
// extensions go to out from out_pos[row]; else their number to counts[row].
template <bool write>
__global__ void k_level(rf_mj_level lv, rf_mj_rows in, uint64_t *counts, const uint64_t *out_pos, uint64_t *out,
                        uint64_t out_cap)
{
    const int lane = threadIdx.x & 31;
    const uint64_t warp = ((uint64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const uint64_t nwarps = ((uint64_t)gridDim.x * blockDim.x) >> 5;
    for (uint64_t row = warp; row < in.n; row += nwarps) {
        uint64_t lo[RF_MULTIJOIN_MAX_IN], hi[RF_MULTIJOIN_MAX_IN];
        int drv = 0;
        bool empty = false;
        for (int x = 0; x < lv.npart; x++) {
            range_of(lv, x, in, row, &lo[x], &hi[x]);
            empty |= lo[x] >= hi[x];
            if (hi[x] - lo[x] < hi[drv] - lo[drv])
                drv = x;
        }
        uint64_t found = 0;
        uint64_t base = write ? out_pos[row] : 0;
        if (!empty) {
            const uint64_t *dcol = lv.cols[drv][lv.col[drv]];
            for (uint64_t j0 = lo[drv]; j0 < hi[drv]; j0 += 32) {
                uint64_t j = j0 + lane;
                bool ok = false;
                uint64_t v = 0;
                if (j < hi[drv]) {
                    v = dcol[j];
                    ok = member(lv, drv, lo, hi, j, lo[drv], v);
                }
                unsigned ballot = __ballot_sync(0xffffffffu, ok);
                if (write && ok) {
                    uint64_t at = base + found + __popc(ballot & ((1u << lane) - 1u));
                    for (int c = 0; c < lv.d; c++)
                        out[(uint64_t)c * out_cap + at] = in.data[(uint64_t)c * in.cap + row];
                    out[(uint64_t)lv.d * out_cap + at] = v;
                }
                found += __popc(ballot);
            }
        }
        if (!write && lane == 0)
            counts[row] = found;
    }
}

}  // namespace

extern "C" cudaError_t rf_k_mj_first(cudaStream_t s, const rf_mj_level *lv, int drv, uint8_t *flags)
{
    k_first<<<grid_for(lv->nrows[drv]), kBlock, 0, s>>>(*lv, drv, flags);
    return cudaGetLastError();
}

extern "C" cudaError_t rf_k_mj_first_write(cudaStream_t s, const rf_mj_level *lv, int drv, const uint8_t *flags,
                                           const uint64_t *pos, uint64_t *out)
{
    k_first_write<<<grid_for(lv->nrows[drv]), kBlock, 0, s>>>(*lv, drv, flags, pos, out);
    return cudaGetLastError();
}

extern "C" cudaError_t rf_k_mj_count(cudaStream_t s, const rf_mj_level *lv, rf_mj_rows in, uint64_t *counts)
{
    if (in.n == 0)
        return cudaSuccess;
    k_level<false><<<grid_for(in.n * 32), kBlock, 0, s>>>(*lv, in, counts, nullptr, nullptr, 0);
    return cudaGetLastError();
}

extern "C" cudaError_t rf_k_mj_write(cudaStream_t s, const rf_mj_level *lv, rf_mj_rows in, const uint64_t *out_pos,
                                     uint64_t *out, uint64_t out_cap)
{
    if (in.n == 0)
        return cudaSuccess;
    k_level<true><<<grid_for(in.n * 32), kBlock, 0, s>>>(*lv, in, nullptr, out_pos, out, out_cap);
    return cudaGetLastError();
}
