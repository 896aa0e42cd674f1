// Launch shapes shared by the library's .cu files (kernels.cu, dense_set.cu,
// multijoin.cu, joinsize.cu): the block size, a grid for n items capped so
// that grid-stride loops take the rest, and that loop; loading kernels' code
// ahead of their first launch; binary searches of a sorted column. CUDA C++
// only.
#ifndef RF_CUDA_LAUNCH_CUH
#define RF_CUDA_LAUNCH_CUH

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

namespace rf_launch {

constexpr int kBlock = 256;

// Blocks of kBlock threads for n items: at least 1, at most 16 waves of
// 65,535 (grid-stride loops cover what is beyond).
inline unsigned grid_for(uint64_t n)
{
    uint64_t g = (n + kBlock - 1) / kBlock;
    if (g < 1)
        g = 1;
    if (g > 65535u * 16u)
        g = 65535u * 16u;
    return (unsigned)g;
}

// Grids of kernels that fold every item into a few global words (maxima,
// flags, histograms): at most kReduceBlocks blocks striding over the items
// (about eight a multiprocessor on an H100/H200), so that the blocks'
// atomics on the same words stay few; a block a kBlock items made ~300,000
// same-word atomics of a 9.7M-row pass, serialised in the L2 (~0.5-0.9 ms).
constexpr unsigned kReduceBlocks = 1024;
inline unsigned reduce_grid_for(uint64_t n)
{
    const unsigned g = grid_for(n);
    return g < kReduceBlocks ? g : kReduceBlocks;
}

// Folds every thread's lo and hi into the block's least and greatest, left
// in thread 0's (a warp's by shuffles, then the warps' through shared
// memory), so that a block meets the global words once. Every thread of the
// block (kBlock threads) calls it.
__device__ __forceinline__ void block_min_max(unsigned long long &lo, unsigned long long &hi)
{
    __shared__ unsigned long long s_lo[kBlock / 32], s_hi[kBlock / 32];
    for (int o = 16; o > 0; o >>= 1) {
        const unsigned long long l2 = __shfl_down_sync(0xffffffffu, lo, o), h2 = __shfl_down_sync(0xffffffffu, hi, o);
        lo = l2 < lo ? l2 : lo;
        hi = h2 > hi ? h2 : hi;
    }
    if ((threadIdx.x & 31) == 0) {
        s_lo[threadIdx.x / 32] = lo;
        s_hi[threadIdx.x / 32] = hi;
    }
    __syncthreads();
    if (threadIdx.x == 0)
        for (int w = 1; w < kBlock / 32; w++) {
            lo = s_lo[w] < lo ? s_lo[w] : lo;
            hi = s_hi[w] > hi ? s_hi[w] : hi;
        }
    __syncthreads();   // (s_lo, s_hi free for the next call)
}

// Loads the code of kernels fns[0..n) without running them: under lazy
// module loading (CUDA 12.2 on) a kernel's first launch waits for its code;
// cudaFuncGetAttributes loads it with nothing on any stream. A kernel not
// loaded here loads at its launch (errors cleared, not reported).
inline void load_code(const void *const *fns, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        cudaFuncAttributes a;
        (void)cudaFuncGetAttributes(&a, fns[i]);
    }
    (void)cudaGetLastError();
}

// The first row of the sorted column col[lo, hi) not less than v, and the
// first greater than v (multijoin.cu's ranges, joinsize.cu's order
// estimate: the same rows counted by both backends).
__device__ __forceinline__ uint64_t lower_bound(const uint64_t *col, uint64_t lo, uint64_t hi, uint64_t v)
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

__device__ __forceinline__ uint64_t upper_bound(const uint64_t *col, uint64_t lo, uint64_t hi, uint64_t v)
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

}  // namespace rf_launch

#define RF_GRID_LOOP(i, n)                                                           \
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);      \
         i += (uint64_t)gridDim.x * blockDim.x)

#endif
