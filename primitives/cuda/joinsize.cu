// The size of an equi-join without making it, on the device (--join=auto's
// run-time statistic; rf_prim_join_size in primitives/cpu/joinsize.c is the
// reference and says why). The smaller side's keys are counted into an
// open-addressing table in device memory (a thread a row: atomicCAS puts
// the key into a free slot, atomicAdd counts), then every row of the other
// side looks its key up and the counts are summed (a block reduction, one
// atomicAdd a block). Keys of several columns are hashed to one word as on the host,
// so both backends count the same.
#include "joinsize.h"

#include "launch.cuh"

namespace {

using rf_launch::grid_for;
using rf_launch::kBlock;

__device__ __forceinline__ uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

__device__ __forceinline__ uint64_t key_of(const rf_js_side &s, uint64_t i)
{
    if (s.nkeys == 1)
        return s.cols[0][i];
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (int k = 0; k < s.nkeys; k++)
        h = mix64(h ^ s.cols[k][i]) + (uint64_t)k;
    return h;
}

// A slot is free while its key is kNoKey (the table is filled with 0xff
// bytes): a thread claims it by CAS-ing its key in, and a thread that finds
// its own key there counts it too, so no thread ever waits for another.
// Rows whose key is kNoKey itself are counted in counts[mask + 1].
constexpr uint64_t kNoKey = ~0ull;

__global__ void js_count(rf_js_side side, unsigned long long *keys, unsigned long long *counts, uint64_t mask)
{
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < side.n;
         i += (uint64_t)gridDim.x * blockDim.x) {
        uint64_t key = key_of(side, i);
        if (key == kNoKey) {
            atomicAdd(&counts[mask + 1], 1ull);
            continue;
        }
        uint64_t s = mix64(key) & mask;
        for (;;) {
            unsigned long long k = atomicCAS(&keys[s], kNoKey, (unsigned long long)key);
            if (k == kNoKey || k == key) {
                atomicAdd(&counts[s], 1ull);
                break;
            }
            s = (s + 1) & mask;
        }
    }
}

__global__ void js_probe(rf_js_side side, const unsigned long long *keys, const unsigned long long *counts,
                         uint64_t mask, unsigned long long *total)
{
    __shared__ unsigned long long part[kBlock];
    unsigned long long sum = 0;
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < side.n;
         i += (uint64_t)gridDim.x * blockDim.x) {
        uint64_t key = key_of(side, i);
        if (key == kNoKey) {
            sum += counts[mask + 1];
            continue;
        }
        uint64_t s = mix64(key) & mask;
        while (keys[s] != kNoKey && keys[s] != key)
            s = (s + 1) & mask;
        sum += counts[s];   // 0 on a free slot: the key is not there
    }
    part[threadIdx.x] = sum;
    __syncthreads();
    for (int w = kBlock / 2; w > 0; w /= 2) {
        if ((int)threadIdx.x < w)
            part[threadIdx.x] += part[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0 && part[0])
        atomicAdd(total, part[0]);
}

} // namespace

extern "C" cudaError_t rf_k_js_count(cudaStream_t s, rf_js_side side, unsigned long long *keys,
                                     unsigned long long *counts, uint64_t mask)
{
    if (side.n == 0)
        return cudaSuccess;
    js_count<<<grid_for(side.n), kBlock, 0, s>>>(side, keys, counts, mask);
    return cudaGetLastError();
}

extern "C" cudaError_t rf_k_js_probe(cudaStream_t s, rf_js_side side, const unsigned long long *keys,
                                     const unsigned long long *counts, uint64_t mask, unsigned long long *total)
{
    if (side.n == 0)
        return cudaSuccess;
    js_probe<<<grid_for(side.n), kBlock, 0, s>>>(side, keys, counts, mask, total);
    return cudaGetLastError();
}
