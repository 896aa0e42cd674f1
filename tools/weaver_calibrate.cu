// The measuring kernels of tools/weaver_calibrate (interface and meaning:
// weaver_calibrate.h). Deliberately plain: grid-stride loops over synthetic
// 8-byte columns, one atomic per warp for the result (so no load is dead
// code), cudaEvent timing.
#include "weaver_calibrate.h"

#include <cuda_runtime.h>

#include <chrono>
#include <stdio.h>
#include <stdlib.h>
#include <vector>

#define CK(x)                                                                                       \
    do {                                                                                            \
        cudaError_t e_ = (x);                                                                       \
        if (e_ != cudaSuccess) {                                                                    \
            fprintf(stderr, "weaver_calibrate: %s: %s (%s:%d)\n", #x, cudaGetErrorString(e_),       \
                    __FILE__, __LINE__);                                                            \
            exit(1);                                                                                \
        }                                                                                           \
    } while (0)

#define TABLE_WORDS (1u << 20) // WC_OP_STR's lookup table: 8 MiB, L2-resident like a string table

// splitmix64's finaliser: uniform words, the same on host and device.
__host__ __device__ static inline uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

__host__ __device__ static inline uint64_t word(size_t i, int j) { return mix((uint64_t)i * WC_MAXCOLS + (uint64_t)j); }

struct Cols {
    const uint64_t *p[WC_MAXCOLS];
};

struct wc_ctx {
    size_t rows;
    uint64_t *col[WC_MAXCOLS];
    uint64_t *table;
    uint32_t *rids;            // row ids (compaction output, or the ordered list)
    unsigned long long *count; // kernel results
    int blocks, threads;
    cudaEvent_t e0, e1;
};

// Sum over the warp, one atomic per warp. Every lane of every warp gets
// here (the loops are grid-stride, blockDim a multiple of 32).
__device__ __forceinline__ void add_count(unsigned long long *out, unsigned long long v)
{
    for (int o = 16; o > 0; o /= 2)
        v += __shfl_down_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0)
        atomicAdd(out, v);
}

#define GRID_LOOP(i, n) \
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

__global__ void k_fill(uint64_t *c, size_t n, int j)
{
    GRID_LOOP(i, n)
    c[i] = word(i, j);
}

__global__ void k_fill_table(uint64_t *t, size_t n)
{
    GRID_LOOP(i, n)
    t[i] = mix(i ^ 0x5bd1e995u);
}

// Branch-free k-column test: every load issued before any compare.
template <int K>
__global__ void k_scan(Cols c, size_t n, uint64_t t, unsigned long long *out)
{
    unsigned long long cnt = 0;
    GRID_LOOP(i, n)
    {
        uint64_t v[K];
#pragma unroll
        for (int j = 0; j < K; j++)
            v[j] = __ldg(c.p[j] + i);
        unsigned p = 1;
#pragma unroll
        for (int j = 0; j < K; j++)
            p &= v[j] < t;
        cnt += p;
    }
    add_count(out, cnt);
}

// Two tests joined by & or by &&, in the shape of the generated select
// kernel (primitives/cuda/codegen.c emit_select_kernel): each thread takes
// WC_ITEMS rows of a tile, unrolled, and the filter is an inlined function
// that returns early after a failed group (&&). That shape matters: with
// all loads unconditional the compiler issues both columns' loads of the
// WC_ITEMS rows together, while under && the second column's loads wait
// for the first column's values; a grid-stride loop of one row per
// iteration (this tool before) hides the difference and measured && as free.
#define WC_ITEMS 8
template <bool BRANCH>
__device__ __forceinline__ bool and_filter(const uint64_t *a, const uint64_t *b, size_t i, uint64_t ta, uint64_t tb)
{
    if (BRANCH) {
        if (!(__ldg(a + i) < ta))
            return false; // &&
        return __ldg(b + i) < tb;
    }
    uint64_t x = __ldg(a + i), y = __ldg(b + i);
    return (x < ta) & (y < tb);
}

template <bool BRANCH>
__global__ void __launch_bounds__(256)
k_and(const uint64_t *a, const uint64_t *b, size_t n, uint64_t ta, uint64_t tb, unsigned long long *out)
{
    unsigned long long cnt = 0;
    const size_t tile = (size_t)WC_ITEMS * blockDim.x; // the whole block iterates together (ballots)
    for (size_t base = blockIdx.x * tile; base < n; base += (size_t)gridDim.x * tile) {
#pragma unroll
        for (int k = 0; k < WC_ITEMS; k++) {
            size_t t = base + (size_t)k * blockDim.x + threadIdx.x;
            bool pass = t < n && and_filter<BRANCH>(a, b, t, ta, tb);
            unsigned m = __ballot_sync(0xffffffffu, pass);
            if ((threadIdx.x & 31) == 0)
                cnt += __popc(m);
        }
    }
    add_count(out, cnt);
}

// reps operations of one class in a dependent chain per row, on values made
// in registers (compute only). Each step is the operation and the little
// glue a generated stage has around it.
template <int CLS>
__global__ void k_ops(size_t n, int reps, const uint64_t *tab, unsigned long long *out)
{
    unsigned long long acc = 0;
    GRID_LOOP(i, n)
    {
        uint64_t x = mix(i), r = x, ovf = 0;
        double d = (double)(x >> 12);
#pragma unroll 8
        for (int k = 0; k < reps; k++) {
            if (CLS == WC_OP_INT) {
                r += (r ^ (uint64_t)k) < x;
            } else if (CLS == WC_OP_DEC) {
                r += (int64_t)(r ^ (uint64_t)k) < (int64_t)x;
            } else if (CLS == WC_OP_FLOAT) {
                d = __dadd_rn(__dmul_rn(d, 0.9999999), 1.0);
                r += d < 1e15;
            } else if (CLS == WC_OP_ARITH) { // checked add, as rf_scalar_ops.h does it
                uint64_t s = r + x;
                ovf |= (r ^ s) & (x ^ s);
                r = s ^ (uint64_t)k;
            } else if (CLS == WC_OP_DIV) {
                r = (uint64_t)((int64_t)(r | 1) / (int64_t)((x >> 40) | 3)) + x;
            } else { // WC_OP_STR: a dependent lookup, as rf_lookup on a string table
                r = __ldg(tab + ((r ^ x) & (TABLE_WORDS - 1))) + (uint64_t)k;
            }
        }
        acc += r + (ovf >> 63) + (unsigned long long)d;
    }
    add_count(out, acc);
}

// Row ids of the rows with a[i] < ta: ballot, one atomic per warp, ids
// written in row order within the warp's slot.
__global__ void k_compact(const uint64_t *a, size_t n, uint64_t ta, uint32_t *rids, unsigned long long *count)
{
    const unsigned lane = threadIdx.x & 31;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i0 = blockIdx.x * (size_t)blockDim.x + (threadIdx.x - lane); i0 < n; i0 += stride) {
        size_t i = i0 + lane; // i0 is the same for the whole warp: all lanes iterate together
        bool p = i < n && __ldg(a + i) < ta;
        unsigned m = __ballot_sync(0xffffffffu, p);
        if (m == 0)
            continue;
        unsigned long long base = 0;
        if (lane == 0)
            base = atomicAdd(count, (unsigned long long)__popc(m));
        base = __shfl_sync(0xffffffffu, base, 0);
        if (p)
            rids[base + __popc(m & ((1u << lane) - 1))] = (uint32_t)i;
    }
}

template <bool IDS_ONLY>
__global__ void k_gather(const uint32_t *rids, size_t m, const uint64_t *b, uint64_t tb, unsigned long long *out)
{
    unsigned long long cnt = 0;
    GRID_LOOP(i, m)
    {
        uint32_t r = __ldg(rids + i);
        cnt += IDS_ONLY ? (r & 1) : (__ldg(b + r) < tb);
    }
    add_count(out, cnt);
}

__global__ void k_empty(unsigned long long *out)
{
    if (threadIdx.x == 1000) // never: a launch that does nothing, not optimised away
        *out = 0;
}

// Best of three timed runs after a warm-up; prep (not timed) runs before each.
template <typename P, typename F>
static double best_ns(wc_ctx *c, P prep, F launch)
{
    prep();
    launch();
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    double best = 1e300;
    for (int r = 0; r < 3; r++) {
        prep();
        CK(cudaEventRecord(c->e0));
        launch();
        CK(cudaGetLastError());
        CK(cudaEventRecord(c->e1));
        CK(cudaEventSynchronize(c->e1));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, c->e0, c->e1));
        if (ms * 1e6 < best)
            best = ms * 1e6;
    }
    return best;
}

static void no_prep() {}

extern "C" int wc_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n;
}

extern "C" uint64_t wc_threshold(double s)
{
    if (s <= 0)
        return 0;
    double x = s * 18446744073709551616.0; // s * 2^64
    return x >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)x;
}

extern "C" wc_ctx *wc_open(size_t rows, char *name, size_t cap)
{
    CK(cudaSetDevice(0));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    snprintf(name, cap, "%s", prop.name);
    wc_ctx *c = (wc_ctx *)calloc(1, sizeof *c);
    if (!c) {
        fprintf(stderr, "weaver_calibrate: out of memory\n");
        exit(1);
    }
    c->rows = rows;
    c->threads = 256;
    c->blocks = prop.multiProcessorCount * 8;
    for (int j = 0; j < WC_MAXCOLS; j++) {
        CK(cudaMalloc(&c->col[j], rows * sizeof(uint64_t)));
        k_fill<<<c->blocks, c->threads>>>(c->col[j], rows, j);
        CK(cudaGetLastError());
    }
    CK(cudaMalloc(&c->table, TABLE_WORDS * sizeof(uint64_t)));
    k_fill_table<<<c->blocks, c->threads>>>(c->table, TABLE_WORDS);
    CK(cudaGetLastError());
    CK(cudaMalloc(&c->rids, rows * sizeof(uint32_t)));
    CK(cudaMalloc(&c->count, sizeof(unsigned long long)));
    CK(cudaEventCreate(&c->e0));
    CK(cudaEventCreate(&c->e1));
    CK(cudaDeviceSynchronize());
    return c;
}

extern "C" void wc_close(wc_ctx *c)
{
    for (int j = 0; j < WC_MAXCOLS; j++)
        CK(cudaFree(c->col[j]));
    CK(cudaFree(c->table));
    CK(cudaFree(c->rids));
    CK(cudaFree(c->count));
    CK(cudaEventDestroy(c->e0));
    CK(cudaEventDestroy(c->e1));
    free(c);
}

extern "C" double wc_scan_ns(wc_ctx *c, int k)
{
    Cols cols;
    for (int j = 0; j < WC_MAXCOLS; j++)
        cols.p[j] = c->col[j];
    uint64_t t = wc_threshold(0.5);
    return best_ns(c, no_prep, [&] {
        switch (k) {
        case 1: k_scan<1><<<c->blocks, c->threads>>>(cols, c->rows, t, c->count); break;
        case 2: k_scan<2><<<c->blocks, c->threads>>>(cols, c->rows, t, c->count); break;
        case 3: k_scan<3><<<c->blocks, c->threads>>>(cols, c->rows, t, c->count); break;
        case 4: k_scan<4><<<c->blocks, c->threads>>>(cols, c->rows, t, c->count); break;
        case 5: k_scan<5><<<c->blocks, c->threads>>>(cols, c->rows, t, c->count); break;
        case 6: k_scan<6><<<c->blocks, c->threads>>>(cols, c->rows, t, c->count); break;
        case 7: k_scan<7><<<c->blocks, c->threads>>>(cols, c->rows, t, c->count); break;
        default: k_scan<8><<<c->blocks, c->threads>>>(cols, c->rows, t, c->count); break;
        }
    });
}

extern "C" double wc_and_ns(wc_ctx *c, double s, int branch)
{
    uint64_t ta = wc_threshold(s), tb = wc_threshold(0.5);
    return best_ns(c, no_prep, [&] {
        if (branch)
            k_and<true><<<c->blocks, c->threads>>>(c->col[0], c->col[1], c->rows, ta, tb, c->count);
        else
            k_and<false><<<c->blocks, c->threads>>>(c->col[0], c->col[1], c->rows, ta, tb, c->count);
    });
}

extern "C" double wc_ops_ns(wc_ctx *c, int cls, int reps)
{
    return best_ns(c, no_prep, [&] {
        switch (cls) {
        case WC_OP_INT: k_ops<WC_OP_INT><<<c->blocks, c->threads>>>(c->rows, reps, c->table, c->count); break;
        case WC_OP_DEC: k_ops<WC_OP_DEC><<<c->blocks, c->threads>>>(c->rows, reps, c->table, c->count); break;
        case WC_OP_FLOAT: k_ops<WC_OP_FLOAT><<<c->blocks, c->threads>>>(c->rows, reps, c->table, c->count); break;
        case WC_OP_ARITH: k_ops<WC_OP_ARITH><<<c->blocks, c->threads>>>(c->rows, reps, c->table, c->count); break;
        case WC_OP_DIV: k_ops<WC_OP_DIV><<<c->blocks, c->threads>>>(c->rows, reps, c->table, c->count); break;
        default: k_ops<WC_OP_STR><<<c->blocks, c->threads>>>(c->rows, reps, c->table, c->count); break;
        }
    });
}

extern "C" double wc_compact_ns(wc_ctx *c, double s, size_t *kept)
{
    uint64_t ta = wc_threshold(s);
    double ns = best_ns(c, [&] { CK(cudaMemset(c->count, 0, sizeof(unsigned long long))); },
                        [&] { k_compact<<<c->blocks, c->threads>>>(c->col[0], c->rows, ta, c->rids, c->count); });
    unsigned long long n = 0;
    CK(cudaMemcpy(&n, c->count, sizeof n, cudaMemcpyDeviceToHost));
    *kept = (size_t)n;
    return ns;
}

extern "C" double wc_gather_ns(wc_ctx *c, double s, int ids_only, size_t *m)
{
    // The ordered id list, made on the host from the same hash (what an
    // order-keeping compaction, as the generated kernels use, leaves).
    uint64_t ta = wc_threshold(s), tb = wc_threshold(0.5);
    std::vector<uint32_t> ids;
    ids.reserve((size_t)(s * (double)c->rows * 1.01) + 1024);
    for (size_t i = 0; i < c->rows; i++)
        if (word(i, 0) < ta)
            ids.push_back((uint32_t)i);
    *m = ids.size();
    if (ids.empty())
        return 0;
    CK(cudaMemcpy(c->rids, ids.data(), ids.size() * sizeof(uint32_t), cudaMemcpyHostToDevice));
    size_t n = ids.size();
    return best_ns(c, no_prep, [&] {
        if (ids_only)
            k_gather<true><<<c->blocks, c->threads>>>(c->rids, n, c->col[1], tb, c->count);
        else
            k_gather<false><<<c->blocks, c->threads>>>(c->rids, n, c->col[1], tb, c->count);
    });
}

extern "C" double wc_launch_sync_ns(wc_ctx *c, int iters)
{
    unsigned int h = 0;
    k_empty<<<1, 32>>>(c->count);
    CK(cudaGetLastError());
    CK(cudaMemcpy(&h, c->count, sizeof h, cudaMemcpyDeviceToHost));
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; i++) {
        k_empty<<<1, 32>>>(c->count);
        CK(cudaGetLastError());
        CK(cudaMemcpy(&h, c->count, sizeof h, cudaMemcpyDeviceToHost));
    }
    auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::nano>(t1 - t0).count() / (iters > 0 ? iters : 1);
}
