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

// ---- A multiway join's variable order (rf_cuda_order_cost, joinsize.c) ----
//
// The m sampled rows of the {p, q} input (rows floor(i x n / m), as on the
// host: rf_order_sample_row) put their keys into two small tables (one a
// list input), every row of each list input counts the rows holding a
// sampled key, and the sum over the samples of the smaller of the two
// counts is the estimate's numerator. The tables hold kNoKey for a free
// slot; the key ~0 itself is counted in counts[mask + 1].

__device__ __forceinline__ uint64_t oc_row(uint64_t i, uint64_t m, uint64_t n)
{
    return i * (n / m) + i * (n % m) / m;
}

__device__ __forceinline__ void oc_insert(unsigned long long *keys, uint64_t mask, uint64_t key)
{
    if (key == kNoKey)
        return;
    uint64_t s = mix64(key) & mask;
    for (;;) {
        unsigned long long k = atomicCAS(&keys[s], kNoKey, (unsigned long long)key);
        if (k == kNoKey || k == key)
            return;
        s = (s + 1) & mask;
    }
}

// The slot of key (mask + 1 for ~0), or -1 when it is not in the table.
__device__ __forceinline__ int64_t oc_slot(const unsigned long long *keys, uint64_t mask, uint64_t key)
{
    if (key == kNoKey)
        return (int64_t)mask + 1;
    uint64_t s = mix64(key) & mask;
    while (keys[s] != kNoKey && keys[s] != key)
        s = (s + 1) & mask;
    return keys[s] == key ? (int64_t)s : -1;
}

// Rows of the sorted column col[0..n) equal to key.
__device__ __forceinline__ unsigned long long oc_sorted_count(const uint64_t *col, uint64_t n, uint64_t key)
{
    uint64_t first = rf_launch::lower_bound(col, 0, n, key);
    return rf_launch::upper_bound(col, first, n, key) - first;
}

__global__ void oc_gather(rf_oc_query q, uint64_t m, unsigned long long *keys_p, unsigned long long *keys_q,
                          uint64_t mask)
{
    RF_GRID_LOOP(i, m) {
        uint64_t r = oc_row(i, m, q.pairs_p.n);
        if (!q.list_p.sorted)
            oc_insert(keys_p, mask, q.pairs_p.col[r]);
        if (!q.list_q.sorted)
            oc_insert(keys_q, mask, q.pairs_q.col[r]);
    }
}

// One pass over a list column counts the rows holding each table's keys;
// two tables when both lists are this column.
__global__ void oc_count(rf_oc_side list, const unsigned long long *keys_a, unsigned long long *counts_a,
                         const unsigned long long *keys_b, unsigned long long *counts_b, uint64_t mask)
{
    RF_GRID_LOOP(i, list.n) {
        uint64_t key = list.col[i];
        int64_t s = oc_slot(keys_a, mask, key);
        if (s >= 0)
            atomicAdd(&counts_a[s], 1ull);
        if (keys_b) {
            s = oc_slot(keys_b, mask, key);
            if (s >= 0)
                atomicAdd(&counts_b[s], 1ull);
        }
    }
}

__global__ void oc_sum(rf_oc_query q, uint64_t m, const unsigned long long *keys_p, const unsigned long long *counts_p,
                       const unsigned long long *keys_q, const unsigned long long *counts_q, uint64_t mask,
                       unsigned long long *total)
{
    __shared__ unsigned long long part[kBlock];
    unsigned long long sum = 0;
    RF_GRID_LOOP(i, m) {
        uint64_t r = oc_row(i, m, q.pairs_p.n), kp = q.pairs_p.col[r], kq = q.pairs_q.col[r];
        unsigned long long a = q.list_p.sorted ? oc_sorted_count(q.list_p.col, q.list_p.n, kp)
                                               : counts_p[oc_slot(keys_p, mask, kp)];
        unsigned long long b = q.list_q.sorted ? oc_sorted_count(q.list_q.col, q.list_q.n, kq)
                                               : counts_q[oc_slot(keys_q, mask, kq)];
        sum += a < b ? a : b;
    }
    block_sum_into(part, sum, total);
}

} // namespace

extern "C" cudaError_t rf_k_oc_estimate(cudaStream_t s, rf_oc_query q, uint64_t m, unsigned long long *mem,
                                        uint64_t mask, unsigned long long *total)
{
    // mem: keys_p, keys_q (mask + 1 each, filled with 0xff bytes), counts_p,
    // counts_q (mask + 2 each, zeroed)
    uint64_t slots = mask + 1;
    unsigned long long *keys_p = mem, *keys_q = mem + slots, *counts_p = mem + 2 * slots,
                       *counts_q = mem + 3 * slots + 1;
    if (m == 0)
        return cudaSuccess;
    if (!q.list_p.sorted || !q.list_q.sorted)
        oc_gather<<<grid_for(m), kBlock, 0, s>>>(q, m, keys_p, keys_q, mask);
    bool same = !q.list_p.sorted && !q.list_q.sorted && q.list_p.col == q.list_q.col && q.list_p.n == q.list_q.n;
    if (!q.list_p.sorted && q.list_p.n > 0)
        oc_count<<<grid_for(q.list_p.n), kBlock, 0, s>>>(q.list_p, keys_p, counts_p, same ? keys_q : nullptr,
                                                         same ? counts_q : nullptr, mask);
    if (!q.list_q.sorted && !same && q.list_q.n > 0)
        oc_count<<<grid_for(q.list_q.n), kBlock, 0, s>>>(q.list_q, keys_q, counts_q, nullptr, nullptr, mask);
    oc_sum<<<grid_for(m), kBlock, 0, s>>>(q, m, keys_p, counts_p, keys_q, counts_q, mask, total);
    return cudaGetLastError();
}

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
    const void *fns[] = {(const void *)js_count, (const void *)js_probe, (const void *)js_sample,
                         (const void *)oc_gather, (const void *)oc_count, (const void *)oc_sum};
    rf_launch::load_code(fns, sizeof fns / sizeof *fns);
}
