// Regrouping a relation's rows by the rank each goes to (the distribution
// layer's moves, ranksplit.c). Each block owns a contiguous chunk of rows,
// so that a rank's rows keep their order: a counting pass gives every
// block's rows per rank, the host turns them into offsets, and a second
// pass writes each tile of 256 rows with the positions of its rows among
// those of the same rank found by __match_any_sync in each warp and a sum
// over the warps before it.
#include "ranksplit.h"

#include "launch.cuh"

namespace {

using rf_launch::kBlock;
constexpr int kWarps = kBlock / 32;

// rf_dist_row_rank_cols (runtime/dist_backend.c) on a row of words: the same
// hash, so that rows uploaded by the host and rows moved here agree.
__device__ __forceinline__ uint64_t mix64(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 31);
}

__device__ __forceinline__ int rank_of(const rf_rs_shape &sh, uint64_t i)
{
    uint64_t h = 0x6a09e667f3bcc909ull;
    for (int c = 0; c < sh.nkeys; c++)
        h = mix64(h, sh.keys.c[c][i]);
    h ^= h >> 29;
    return (int)(((h * 0x94d049bb133111ebull) >> 32) % (uint64_t)sh.size);
}

__global__ void k_rs_count(rf_rs_shape sh, unsigned long long *counts)
{
    __shared__ unsigned cnt[RF_CUDA_MAX_RANKS];
    for (int d = threadIdx.x; d < sh.size; d += blockDim.x)
        cnt[d] = 0;
    __syncthreads();
    uint64_t lo = (uint64_t)blockIdx.x * sh.chunk;
    uint64_t hi = lo + sh.chunk < sh.n ? lo + sh.chunk : sh.n;
    for (uint64_t i = lo + threadIdx.x; i < hi; i += blockDim.x)
        atomicAdd(&cnt[rank_of(sh, i)], 1u);
    __syncthreads();
    for (int d = threadIdx.x; d < sh.size; d += blockDim.x)
        counts[(uint64_t)blockIdx.x * sh.size + d] = cnt[d];
}

__global__ void k_rs_scatter(rf_rs_shape sh, const unsigned long long *meta, uint64_t *packed)
{
    __shared__ unsigned warp_cnt[kWarps][RF_CUDA_MAX_RANKS];
    __shared__ unsigned long long next[RF_CUDA_MAX_RANKS];   // where the tile's rows for d begin
    const unsigned long long *rows = meta + (uint64_t)gridDim.x * sh.size, *start = rows + sh.size;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int d = threadIdx.x; d < sh.size; d += blockDim.x)
        next[d] = meta[(uint64_t)blockIdx.x * sh.size + d];
    uint64_t lo = (uint64_t)blockIdx.x * sh.chunk;
    uint64_t hi = lo + sh.chunk < sh.n ? lo + sh.chunk : sh.n;
    unsigned below = (1u << lane) - 1;
    for (uint64_t tile = lo; tile < hi; tile += kBlock) {
        for (int d = lane; d < sh.size; d += 32)
            warp_cnt[warp][d] = 0;
        __syncwarp();
        uint64_t i = tile + threadIdx.x;
        bool valid = i < hi;
        int d = valid ? rank_of(sh, i) : -1;
        unsigned same = __match_any_sync(0xffffffffu, d);
        if (valid && lane == __ffs(same) - 1)
            warp_cnt[warp][d] = __popc(same);
        __syncthreads();
        if (valid) {
            unsigned long long pos = next[d] + __popc(same & below);
            for (int w = 0; w < warp; w++)
                pos += warp_cnt[w][d];
            uint64_t *out = packed + start[d] * (uint64_t)sh.arity + pos;
            for (int c = 0; c < sh.arity; c++)
                out[(uint64_t)c * rows[d]] = sh.cols.c[c][i];
        }
        __syncthreads();
        for (int e = threadIdx.x; e < sh.size; e += blockDim.x) {
            unsigned long long add = 0;
            for (int w = 0; w < kWarps; w++)
                add += warp_cnt[w][e];
            next[e] += add;
        }
        __syncthreads();
    }
}

}  // namespace

extern "C" cudaError_t rf_k_rs_count(cudaStream_t s, rf_rs_shape sh, unsigned nblocks, unsigned long long *counts)
{
    k_rs_count<<<nblocks, kBlock, 0, s>>>(sh, counts);
    return cudaGetLastError();
}

extern "C" cudaError_t rf_k_rs_scatter(cudaStream_t s, rf_rs_shape sh, unsigned nblocks,
                                       const unsigned long long *meta, uint64_t *packed)
{
    k_rs_scatter<<<nblocks, kBlock, 0, s>>>(sh, meta, packed);
    return cudaGetLastError();
}
