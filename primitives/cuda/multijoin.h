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
 * within it. Passed by value (about 4 KB of kernel parameters: CUDA 12.1
 * and later take up to 32 KB on Volta and newer). */
typedef struct rf_mj_dir {
    const uint32_t *off;     /* NULL: none (binary search instead) */
    uint64_t min, span;      /* the column's values lie in [min, min + span] */
} rf_mj_dir;

/* Bitmaps of an input's long ranges (hubs of a skewed graph): where the
 * range of first-column value v0 is long, membership of value v in it is
 * one bit, bits[slot[v0 - dir.min] * words + (v - min) / 32], instead of a
 * binary search of ~log2(range) dependent loads. slot NULL: none;
 * RF_MJ_NO_HUB: v0's range has no bitmap. Only for an input taking part
 * with its second column (col 1), whose range the directory gives. */
#define RF_MJ_NO_HUB 0xffffffffu
typedef struct rf_mj_hubs {
    const uint32_t *slot;
    const uint32_t *bits;
    uint64_t min;            /* the second column's smallest value */
    uint64_t words;          /* 32-bit words a bitmap: values min .. min + 32 * words - 1 */
} rf_mj_hubs;

typedef struct rf_mj_level {
    int d;
    int npart;
    /* A directory on input x's first column (rows off[v - min] ..
     * off[v - min + 1] - 1 hold value v): the range of a binding's first
     * prefix value in two loads instead of two binary searches over the
     * whole input, and at level 0 membership in one. */
    rf_mj_dir dir[RF_MULTIJOIN_MAX_IN];
    rf_mj_hubs hub[RF_MULTIJOIN_MAX_IN];
    int col[RF_MULTIJOIN_MAX_IN];
    /* Whether column col[x] is input x's last: its values within a
     * binding's range are then distinct (the rows are), and the level
     * need not skip a value repeated by a later column. */
    uint8_t distinct[RF_MULTIJOIN_MAX_IN];
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
/* The directory of a sorted column of n rows with values in [min, min +
 * span]: off has span + 2 entries, off[i] the first row whose value is at
 * least min + i (off[span + 1] = n). */
cudaError_t rf_k_mj_directory(cudaStream_t s, const uint64_t *col, uint64_t n, uint64_t min, uint64_t span,
                              uint32_t *off);
/* For an input's hub bitmaps: out[0] := the smallest value of col (n
 * rows), out[1] := the largest, out[2 + k] := the number of directory
 * entries (first-column values, span + 1 of them) whose range has
 * 2^k .. 2^(k+1) - 1 rows. out (66 words) zeroed by the caller but for
 * out[0], all ones. */
cudaError_t rf_k_mj_hub_stats(cudaStream_t s, const uint64_t *col, uint64_t n, const uint32_t *off, uint64_t span,
                              uint64_t *out);
/* flags[i] := whether entry i's range has at least `least` rows. */
cudaError_t rf_k_mj_hub_flags(cudaStream_t s, const uint32_t *off, uint64_t span, uint64_t least, uint8_t *flags);
/* slot[i] := pos[i] where flags[i], else RF_MJ_NO_HUB. */
cudaError_t rf_k_mj_hub_slots(cudaStream_t s, const uint8_t *flags, const uint64_t *pos, uint64_t span,
                              uint32_t *slot);
/* Sets the bit of every row's second-column value in its range's bitmap
 * (rows whose first-column value has one; bits zeroed by the caller). */
cudaError_t rf_k_mj_hub_fill(cudaStream_t s, const uint64_t *col0, const uint64_t *col1, uint64_t n,
                             uint64_t dir_min, const rf_mj_hubs *h, uint32_t *bits);
/* Levels 1..: the length of every binding's driver range (the shortest of
 * the inputs' ranges; 0 when one is empty): len[i], for i < in.n. */
cudaError_t rf_k_mj_driver_len(cudaStream_t s, const rf_mj_level *lv, rf_mj_rows in, uint64_t *len);
/* In place: len[i] becomes the number of chunks of `chunk` driver values
 * binding i is cut into (its work items). */
cudaError_t rf_k_mj_chunks(cudaStream_t s, uint64_t *len, uint64_t n, uint64_t chunk);
/* item_row[k] = the binding of work item k, for the items istart[i] ..
 * istart[i + 1] - 1 of every binding i < n. */
cudaError_t rf_k_mj_items(cudaStream_t s, const uint64_t *istart, uint64_t n, uint64_t *item_row);
/* A team of `team` lanes (4, 8, 16 or 32) a work item (one chunk of a
 * binding's driver range): its values are looked up in the other inputs'
 * ranges by binary search and the extensions counted (counts[k]), or
 * written from out_pos[k] into `out` (columns 0..d-1 copied from the
 * binding, column d the new value; cap out_cap). Items keep the bindings'
 * order and each chunk its values' order, so the output is in order.
 * With `bits` (one bit a driver value: binding i's from bit doff[i],
 * zeroed before the count), the count records which values matched and
 * the write reads them back instead of searching again. */
typedef struct rf_mj_items {
    const uint64_t *row, *istart;
    uint64_t n, chunk;
    int team;
    const uint64_t *doff;    /* with bits: each binding's first bit */
    uint32_t *bits;          /* NULL: the write searches again */
    uint64_t pivots;         /* searched ranges this long or longer are first narrowed by the
                              * team's pivots (levels of two inputs); 0: never */
    int unroll;              /* a count alone on a level of two inputs: two values a lane a trip,
                              * counted a lane (RF_GPU_LFTJ_UNROLL=off: 0, to measure) */
} rf_mj_items;
cudaError_t rf_k_mj_count(cudaStream_t s, const rf_mj_level *lv, rf_mj_rows in, rf_mj_items items,
                          uint64_t *counts);
cudaError_t rf_k_mj_write(cudaStream_t s, const rf_mj_level *lv, rf_mj_rows in, rf_mj_items items,
                          const uint64_t *out_pos, uint64_t *out, uint64_t out_cap);

/* Loads the code of every kernel above (lazy module loading: each one's
 * first launch would wait for it), none run. */
void rf_k_mj_load(void);

#ifdef __cplusplus
}
#endif

#endif
