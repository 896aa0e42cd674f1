/* The join-size count's kernels (joinsize.cu), as joinsize.c launches
 * them. Valid C and C++. */
#ifndef RF_CUDA_JOINSIZE_H
#define RF_CUDA_JOINSIZE_H

#include <cuda_runtime_api.h>
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

/* Loads the code of the kernels above (lazy module loading), none run. */
void rf_k_js_load(void);

#ifdef __cplusplus
}
#endif

#endif
