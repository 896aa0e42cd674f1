// The size of an equi-join without making it, on the device (--join=auto's
// run-time statistic; rf_prim_join_size in primitives/cpu/joinsize.c is the
// reference and says why). The smaller side's keys are counted into an
// open-addressing table in device memory (a thread a row: atomicCAS claims
// a slot, atomicAdd counts), then every row of the other side looks its
// key up and the counts are summed (a block reduction, one atomicAdd a
// block). Keys of several columns are hashed to one word as on the host,
// so both backends count the same.
#include "joinsize.h"

namespace {

constexpr int kBlock = 256;
constexpr unsigned long long kEmpty = 0;   // a slot's count: 0 = unclaimed

inline unsigned grid_for(uint64_t n)
{
    uint64_t g = (n + kBlock - 1) / kBlock;
    if (g < 1)
        g = 1;
    if (g > 65535u * 16u)
        g = 65535u * 16u;
    return (unsigned)g;
}

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

// Slot states: counts[slot] == 0 free; a thread claims a slot by CAS-ing
// its count from 0 to a "being written" mark, writes the key, then sets
// the count. Readers of a marked slot wait for the key.
constexpr unsigned long long kBusy = ~0ull;

__global__ void js_count(rf_js_side side, uint64_t *keys, unsigned long long *counts, uint64_t mask)
{
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < side.n;
         i += (uint64_t)gridDim.x * blockDim.x) {
        uint64_t key = key_of(side, i);
        uint64_t s = mix64(key) & mask;
        for (;;) {
            unsigned long long c = atomicCAS(&counts[s], kEmpty, kBusy);
            if (c == kEmpty) {                       // claimed: publish the key
                volatile uint64_t *vk = keys;
                vk[s] = key;
                __threadfence();
                atomicExch(&counts[s], 1ull);
                break;
            }
            while (c == kBusy) {                     // another thread is writing it
                c = atomicAdd(&counts[s], 0ull);
            }
            if (((volatile uint64_t *)keys)[s] == key) {
                atomicAdd(&counts[s], 1ull);
                break;
            }
            s = (s + 1) & mask;
        }
    }
}

__global__ void js_probe(rf_js_side side, const uint64_t *keys, const unsigned long long *counts, uint64_t mask,
                         unsigned long long *total)
{
    __shared__ unsigned long long part[kBlock];
    unsigned long long sum = 0;
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < side.n;
         i += (uint64_t)gridDim.x * blockDim.x) {
        uint64_t key = key_of(side, i);
        uint64_t s = mix64(key) & mask;
        while (counts[s] != kEmpty && keys[s] != key)
            s = (s + 1) & mask;
        sum += counts[s];
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

extern "C" cudaError_t rf_k_js_count(cudaStream_t s, rf_js_side side, uint64_t *keys, unsigned long long *counts,
                                     uint64_t mask)
{
    if (side.n == 0)
        return cudaSuccess;
    js_count<<<grid_for(side.n), kBlock, 0, s>>>(side, keys, counts, mask);
    return cudaGetLastError();
}

extern "C" cudaError_t rf_k_js_probe(cudaStream_t s, rf_js_side side, const uint64_t *keys,
                                     const unsigned long long *counts, uint64_t mask, unsigned long long *total)
{
    if (side.n == 0)
        return cudaSuccess;
    js_probe<<<grid_for(side.n), kBlock, 0, s>>>(side, keys, counts, mask, total);
    return cudaGetLastError();
}
