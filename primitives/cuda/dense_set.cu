// Kernels of dense sets (dense_set.c): a sorted relation held as a bitmap
// over its packed rows. A row's key is the concatenation of (value - lo)
// of every column, column 0 in the high bits, so bit order is row order
// and expanding the bitmap yields the rows already sorted.
#include "cuda_internal.h"

#include <stdint.h>

#include "launch.cuh"

namespace {

using rf_launch::grid_for;
using rf_launch::reduce_grid_for;
using rf_launch::block_min_max;
using rf_launch::kBlock;


typedef unsigned long long ull;

// The key of row i, or false when a value lies outside the frame (a value
// below lo wraps to a huge offset, so one compare covers both ends).
__device__ __forceinline__ bool row_key(const rf_cols &c, uint64_t i, const rf_dframe &f, uint64_t *key)
{
    uint64_t k = 0;
    for (int j = 0; j < f.ncols; j++) {
        uint64_t d = c.c[j][i] - f.lo[j];
        if (d > f.mask[j])
            return false;
        k |= d << f.shift[j];
    }
    *key = k;
    return true;
}

__device__ __forceinline__ ull warp_sum(ull v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

// counters[0] += bits newly set, counters[1] += rows outside the frame.
__global__ void k_dset_insert(rf_cols b, uint64_t n, rf_dframe f, ull *words, ull *counters)
{
    ull added = 0, outside = 0;
    RF_GRID_LOOP(i, n)
    {
        uint64_t key;
        if (!row_key(b, i, f, &key)) {
            outside++;
            continue;
        }
        ull bit = 1ull << (key & 63);
        if (!(atomicOr(&words[key >> 6], bit) & bit))
            added++;
    }
    added = warp_sum(added);
    outside = warp_sum(outside);
    if ((threadIdx.x & 31) == 0) {
        if (added)
            atomicAdd(&counters[0], added);
        if (outside)
            atomicAdd(&counters[1], outside);
    }
}

__global__ void k_dset_absent(rf_cols a, uint64_t n, rf_dframe f, const ull *words, uint8_t *flags)
{
    RF_GRID_LOOP(i, n)
    {
        uint64_t key;
        flags[i] = !row_key(a, i, f, &key) || !((words[key >> 6] >> (key & 63)) & 1);
    }
}

constexpr int kGroupWords = 8; // words per expansion thread

// The expansion reads words[w] & ~minus[w] (minus NULL: nothing removed),
// so a difference of two sets in one frame expands without a third bitmap.
__device__ __forceinline__ ull word_at(const ull *words, const ull *minus, uint64_t w)
{
    return minus ? words[w] & ~minus[w] : words[w];
}

__global__ void k_dset_group_counts(const ull *words, const ull *minus, uint64_t nwords, uint64_t ngroups,
                                    uint64_t *counts)
{
    RF_GRID_LOOP(g, ngroups)
    {
        uint64_t c = 0, end = (g + 1) * kGroupWords < nwords ? (g + 1) * kGroupWords : nwords;
        for (uint64_t w = g * kGroupWords; w < end; w++)
            c += (uint64_t)__popcll(word_at(words, minus, w));
        counts[g] = c;
    }
}

// Output column p of the expansion is frame column src.c[p].
struct OutCols {
    int n;
    int c[RF_CUDA_MAX_COLS];
};

__global__ void k_dset_expand(const ull *words, const ull *minus, uint64_t nwords, uint64_t ngroups,
                              const uint64_t *pos, rf_dframe f, OutCols src, rf_wcols out)
{
    RF_GRID_LOOP(g, ngroups)
    {
        uint64_t o = pos[g], end = (g + 1) * kGroupWords < nwords ? (g + 1) * kGroupWords : nwords;
        for (uint64_t w = g * kGroupWords; w < end; w++) {
            ull x = word_at(words, minus, w);
            while (x) {
                uint64_t key = (w << 6) | (uint64_t)(__ffsll((long long)x) - 1);
                x &= x - 1;
                for (int p = 0; p < src.n; p++) {
                    int j = src.c[p];
                    out.c[p][o] = ((key >> f.shift[j]) & f.mask[j]) + f.lo[j];
                }
                o++;
            }
        }
    }
}

// dst[w] |= src[i * nwords + w] for every i < n (sets in one frame: the
// parts of a relation gathered from other ranks); counter += bits set in
// the result.
__global__ void k_dset_or(ull *dst, const ull *src, int n, uint64_t nwords, ull *counter)
{
    ull bits = 0;
    RF_GRID_LOOP(w, nwords)
    {
        ull x = dst[w];
        for (int i = 0; i < n; i++)
            x |= src[(uint64_t)i * nwords + w];
        dst[w] = x;
        bits += (ull)__popcll(x);
    }
    bits = warp_sum(bits);
    if ((threadIdx.x & 31) == 0 && bits)
        atomicAdd(counter, bits);
}

// mm[j] = min, mm[ncols + j] = max of column j (the caller initialises
// them to ~0 and 0). A block folds its extremes (block_min_max) and meets
// the global words once (a grid of reduce_grid_for blocks: same-word
// atomics a warp serialise in the L2).
__global__ void k_col_minmax(rf_cols c, int ncols, uint64_t n, ull *mm)
{
    for (int j = 0; j < ncols; j++) {
        ull lo = ~0ull, hi = 0;
        RF_GRID_LOOP(i, n)
        {
            ull v = c.c[j][i];
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
        block_min_max(lo, hi);
        if (threadIdx.x == 0) {
            atomicMin(&mm[j], lo);
            atomicMax(&mm[ncols + j], hi);
        }
    }
}

#define LAUNCH(kernel, n, s, ...)                                                     \
    do {                                                                              \
        if ((n) == 0)                                                                 \
            return cudaSuccess;                                                       \
        kernel<<<grid_for(n), kBlock, 0, s>>>(__VA_ARGS__);                           \
        return cudaGetLastError();                                                    \
    } while (0)

} // namespace

extern "C" {

cudaError_t rf_k_dset_insert(cudaStream_t s, rf_cols b, size_t n, rf_dframe f, uint64_t *words,
                             uint64_t *counters)
{
    LAUNCH(k_dset_insert, n, s, b, n, f, (ull *)words, (ull *)counters);
}

cudaError_t rf_k_dset_absent(cudaStream_t s, rf_cols a, size_t n, rf_dframe f, const uint64_t *words,
                             uint8_t *flags)
{
    LAUNCH(k_dset_absent, n, s, a, n, f, (const ull *)words, flags);
}

size_t rf_dset_groups(size_t nwords) { return (nwords + kGroupWords - 1) / kGroupWords; }

cudaError_t rf_k_dset_group_counts(cudaStream_t s, const uint64_t *words, const uint64_t *minus, size_t nwords,
                                   uint64_t *counts)
{
    size_t ng = rf_dset_groups(nwords);
    LAUNCH(k_dset_group_counts, ng, s, (const ull *)words, (const ull *)minus, nwords, ng, counts);
}

cudaError_t rf_k_dset_expand(cudaStream_t s, const uint64_t *words, const uint64_t *minus, size_t nwords,
                             const uint64_t *pos, rf_dframe f, int nout, const int *src_host, rf_wcols out)
{
    OutCols src{};
    src.n = src_host ? nout : f.ncols;
    for (int p = 0; p < src.n && p < RF_CUDA_MAX_COLS; p++)
        src.c[p] = src_host ? src_host[p] : p;
    size_t ng = rf_dset_groups(nwords);
    LAUNCH(k_dset_expand, ng, s, (const ull *)words, (const ull *)minus, nwords, ng, pos, f, src, out);
}

cudaError_t rf_k_dset_or(cudaStream_t s, uint64_t *dst, const uint64_t *src, int n, size_t nwords,
                         uint64_t *counter)
{
    LAUNCH(k_dset_or, nwords, s, (ull *)dst, (const ull *)src, n, nwords, (ull *)counter);
}

cudaError_t rf_k_col_minmax(cudaStream_t s, rf_cols c, int ncols, size_t n, uint64_t *mm)
{
    if (n == 0)
        return cudaSuccess;
    k_col_minmax<<<reduce_grid_for(n), kBlock, 0, s>>>(c, ncols, n, (ull *)mm);
    return cudaGetLastError();
}

} // extern "C"
