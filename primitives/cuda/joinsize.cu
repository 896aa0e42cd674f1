// The size of an equi-join without making it, on the device (--join=auto's
// run-time statistic; rf_prim_join_size in primitives/cpu/joinsize.c is the
// reference and says why). The smaller side's keys are counted into an
// open-addressing table in device memory (a thread a row: atomicCAS puts
// the key into a free slot, atomicAdd counts), then every row of the other
// side looks its key up and the counts are summed (a block reduction, one
// atomicAdd a block). Keys of several columns are hashed to one word as on the host,
// so both backends count the same. Or, when the larger side has more rows
// than RF_JS_SAMPLE_ROWS, a sample of its rows is counted against the
// whole smaller side in one kernel (js_sample), and scaled up.
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

// *total += the sum of every thread's `sum` in the block (part: kBlock words
// of shared memory; every thread of the block calls it).
__device__ void block_sum_into(unsigned long long *part, unsigned long long sum, unsigned long long *total)
{
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
    block_sum_into(part, sum, total);
}

// The sampled count: every block holds the m sampled rows' keys (with how
// often each was sampled) in a shared table of kSampleSlots slots, counts
// the rows of its share of the other side that hit them, and adds
// sum(times sampled x rows hit) over its slots to *total. Rows whose key is
// kNoKey (a free slot's mark) are tallied apart.
constexpr int kSampleSlots = 2 * RF_JS_SAMPLE_ROWS;

__global__ void js_sample(rf_js_side sampled, uint64_t m, uint64_t stride, rf_js_side probe,
                          unsigned long long *total)
{
    __shared__ unsigned long long skey[kSampleSlots];
    __shared__ unsigned smult[kSampleSlots], scount[kSampleSlots];
    __shared__ unsigned nokey_mult, nokey_count;
    __shared__ unsigned long long part[kBlock];
    for (int q = threadIdx.x; q < kSampleSlots; q += blockDim.x) {
        skey[q] = kNoKey;
        smult[q] = 0;
        scount[q] = 0;
    }
    if (threadIdx.x == 0)
        nokey_mult = nokey_count = 0;
    __syncthreads();
    for (uint64_t t = threadIdx.x; t < m; t += blockDim.x) {
        uint64_t key = key_of(sampled, t * stride);
        if (key == kNoKey) {
            atomicAdd(&nokey_mult, 1u);
            continue;
        }
        unsigned s = (unsigned)(mix64(key) & (kSampleSlots - 1));
        for (;;) {
            unsigned long long k = atomicCAS(&skey[s], kNoKey, (unsigned long long)key);
            if (k == kNoKey || k == key) {
                atomicAdd(&smult[s], 1u);
                break;
            }
            s = (s + 1) & (kSampleSlots - 1);
        }
    }
    __syncthreads();
    RF_GRID_LOOP(i, probe.n) {
        uint64_t key = key_of(probe, i);
        if (key == kNoKey) {
            if (nokey_mult)
                atomicAdd(&nokey_count, 1u);
            continue;
        }
        unsigned s = (unsigned)(mix64(key) & (kSampleSlots - 1));
        while (skey[s] != kNoKey && skey[s] != key)
            s = (s + 1) & (kSampleSlots - 1);
        if (skey[s] == key)
            atomicAdd(&scount[s], 1u);
    }
    __syncthreads();
    unsigned long long sum = 0;
    for (int q = threadIdx.x; q < kSampleSlots; q += blockDim.x)
        sum += (unsigned long long)smult[q] * scount[q];
    if (threadIdx.x == 0)
        sum += (unsigned long long)nokey_mult * nokey_count;
    block_sum_into(part, sum, total);
}

} // namespace

extern "C" cudaError_t rf_k_js_sample(cudaStream_t s, rf_js_side sampled, uint64_t m, uint64_t stride,
                                      rf_js_side probe, unsigned long long *total, unsigned max_blocks)
{
    if (m == 0 || probe.n == 0)
        return cudaSuccess;
    // A block per 8 rows a thread (each block first fills its table of m
    // keys, so no more blocks than keep the scan the larger part).
    uint64_t blocks = (probe.n + 8 * kBlock - 1) / (8 * kBlock);
    if (blocks < 1)
        blocks = 1;
    if (blocks > max_blocks)
        blocks = max_blocks;
    js_sample<<<(unsigned)blocks, kBlock, 0, s>>>(sampled, m, stride, probe, total);
    return cudaGetLastError();
}

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

extern "C" void rf_k_js_load(void)
{
    const void *fns[] = {(const void *)js_count, (const void *)js_probe, (const void *)js_sample};
    rf_launch::load_code(fns, sizeof fns / sizeof *fns);
}
