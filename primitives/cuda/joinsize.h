/* The join-size count's kernels (joinsize.cu), as joinsize.c launches
 * them. Valid C and C++. */
#ifndef RF_CUDA_JOINSIZE_H
#define RF_CUDA_JOINSIZE_H

#include <cuda_runtime_api.h>
#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The key columns of one side: cols[k] is key column k (nkeys of them,
 * at most RF_JS_MAX_KEYS; more are hashed as the first ones). */
#define RF_JS_MAX_KEYS 16
typedef struct rf_js_side {
    const uint64_t *cols[RF_JS_MAX_KEYS];
    int nkeys;
    uint64_t n;
} rf_js_side;

/* Counts every row's key into the open-addressing table keys/counts:
 * mask + 1 slots, keys filled with 0xff bytes (a free slot) and counts
 * zeroed before; counts has one more entry, for the key ~0 itself. */
cudaError_t rf_k_js_count(cudaStream_t s, rf_js_side side, unsigned long long *keys, unsigned long long *counts,
                          uint64_t mask);
/* *total (zeroed before) += the count of every row's key of `side`
 * (saturating is left to the caller: a 64-bit sum of products of row
 * counts below 2^32 each cannot overflow for inputs under 2^32 rows). */
cudaError_t rf_k_js_probe(cudaStream_t s, rf_js_side side, const unsigned long long *keys,
                          const unsigned long long *counts, uint64_t mask, unsigned long long *total);

/* The sampled count: m rows of `sampled` (rows 0, stride, 2 x stride, ...;
 * m <= RF_JS_SAMPLE_ROWS) against every row of `probe`: *total (zeroed
 * before) += the number of (sampled row, probe row) pairs with equal keys.
 * At most max_blocks blocks. */
#define RF_JS_SAMPLE_ROWS 1024
cudaError_t rf_k_js_sample(cudaStream_t s, rf_js_side sampled, uint64_t m, uint64_t stride, rf_js_side probe,
                           unsigned long long *total, unsigned max_blocks);

/* A multiway join's last level estimated (rf_cuda_order_cost): one
 * column of a relation; `sorted`: the column is sorted (an input's first:
 * a key's rows are found by binary search, not counted in a pass). */
typedef struct rf_oc_side {
    const uint64_t *col;
    uint64_t n;
    bool sorted;
} rf_oc_side;
typedef struct rf_oc_query {
    rf_oc_side pairs_p, pairs_q, list_p, list_q;
} rf_oc_query;
/* *total (zeroed before) += the sum over the m sampled rows r of the
 * pairs input (rows floor(i x n / m), n = pairs_p.n = pairs_q.n) of
 * min(rows of list_p holding pairs_p.col[r], rows of list_q holding
 * pairs_q.col[r]). mem: 4 x (mask + 1) + 2 words, the first 2 x (mask + 1)
 * filled with 0xff bytes and the rest zeroed before; mask + 1 >= 2m, a
 * power of two. */
cudaError_t rf_k_oc_estimate(cudaStream_t s, rf_oc_query q, uint64_t m, unsigned long long *mem, uint64_t mask,
                             unsigned long long *total);

/* Loads the code of the kernels above (lazy module loading), none run. */
void rf_k_js_load(void);

#ifdef __cplusplus
}
#endif

#endif
