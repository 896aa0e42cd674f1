/* The breadth-first leapfrog triejoin's kernels (multijoin.cu), as the C
 * orchestration (multijoin.c) launches them. Valid C and C++. */
#ifndef RF_CUDA_MULTIJOIN_H
#define RF_CUDA_MULTIJOIN_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "../../harmony_ir/hir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One level: binding variable `d` (the d variables before are columns
 * 0..d-1 of the partial bindings). Every input x with a column for d takes
 * part: its rows agreeing with a binding on its columns before (which bind
 * prefix_var[x][0..col[x])) form a range; its column col[x] is sorted
 * within it. Passed by value (about 3 KB of kernel parameters). */
typedef struct rf_mj_level {
    int d;
    int npart;
    int col[RF_MULTIJOIN_MAX_IN];
    int prefix_var[RF_MULTIJOIN_MAX_IN][RF_MULTIJOIN_MAX_VARS];
    const uint64_t *cols[RF_MULTIJOIN_MAX_IN][RF_MULTIJOIN_MAX_VARS];
    uint64_t nrows[RF_MULTIJOIN_MAX_IN];
} rf_mj_level;

/* The partial bindings: column v is data + v * cap. */
typedef struct rf_mj_rows {
    const uint64_t *data;
    uint64_t cap, n;
} rf_mj_rows;

/* Level 0 (no binding yet): flags[j] = 1 where row j of the shortest
 * input `drv` starts a new value of its first column that every other
 * input holds. */
cudaError_t rf_k_mj_first(cudaStream_t s, const rf_mj_level *lv, int drv, uint8_t *flags);
/* Writes those values: out[pos[j]] = value of row j where flags[j]. */
cudaError_t rf_k_mj_first_write(cudaStream_t s, const rf_mj_level *lv, int drv, const uint8_t *flags,
                                const uint64_t *pos, uint64_t *out);
/* Levels 1..: one warp per binding intersects the inputs' ranges (the
 * shortest one's values, each looked up in the others by binary search)
 * and counts the extensions (counts[i]), or writes them from out_pos[i]
 * into `out` (columns 0..d copied, column d the new value; cap out_cap). */
cudaError_t rf_k_mj_count(cudaStream_t s, const rf_mj_level *lv, rf_mj_rows in, uint64_t *counts);
cudaError_t rf_k_mj_write(cudaStream_t s, const rf_mj_level *lv, rf_mj_rows in, const uint64_t *out_pos,
                          uint64_t *out, uint64_t out_cap);

#ifdef __cplusplus
}
#endif

#endif
