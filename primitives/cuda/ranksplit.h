/* The rank split's kernels (ranksplit.cu), as ranksplit.c launches them.
 * Valid C and C++. */
#ifndef RF_CUDA_RANKSPLIT_H
#define RF_CUDA_RANKSPLIT_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "cuda_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Rows [b * chunk, (b + 1) * chunk) of n are block b's (chunk a multiple
 * of the block size); the rank of a row is rf_dist_row_rank_cols's hash of
 * the columns keys.c[0..nkeys) (the first nkeys of cols, or others in
 * another order), modulo size (<= RF_CUDA_MAX_RANKS); cols are what moves. */
typedef struct rf_rs_shape {
    rf_cols cols, keys;
    int arity, nkeys, size;
    uint64_t n, chunk;
} rf_rs_shape;

/* counts[b * size + d] := the rows of block b for rank d. */
cudaError_t rf_k_rs_count(cudaStream_t s, rf_rs_shape sh, unsigned nblocks, unsigned long long *counts);
/* Writes every row to packed, rank by rank and in row order within a
 * rank: column c of rank d's section at packed + start[d] * arity + c *
 * rows[d]; base[b * size + d] is where block b's rows for d begin within
 * d's section. meta holds base (nblocks * size words), then rows and start
 * (size words each). */
cudaError_t rf_k_rs_scatter(cudaStream_t s, rf_rs_shape sh, unsigned nblocks, const unsigned long long *meta,
                            uint64_t *packed);

#ifdef __cplusplus
}
#endif

#endif
