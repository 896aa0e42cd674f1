/* The measuring kernels of tools/weaver_calibrate (in weaver_calibrate.cu),
 * behind a C interface for its main (weaver_calibrate.c). Every column is
 * 8-byte words in device memory, word i of column j a hash of (i, j), so
 * `word < wc_threshold(s)` holds on a fraction s of the rows, independently
 * across columns. Times are ns of kernel time, the best of three runs after
 * a warm-up. A CUDA error prints a message and exits with status 1. */
#ifndef RF_WEAVER_CALIBRATE_H
#define RF_WEAVER_CALIBRATE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WC_MAXCOLS 8

/* Operation classes measured, in rf_selop order (weaver/selplan.h). */
enum { WC_OP_INT, WC_OP_DEC, WC_OP_FLOAT, WC_OP_ARITH, WC_OP_DIV, WC_OP_STR, WC_OP_COUNT };

typedef struct wc_ctx wc_ctx;

int wc_device_count(void); /* 0 when there is no device or no driver */
/* Device 0 with WC_MAXCOLS columns of `rows` words; name gets the device's name. */
wc_ctx *wc_open(size_t rows, char *name, size_t cap);
void wc_close(wc_ctx *c);
uint64_t wc_threshold(double s);

/* count(c0 < t & ... & c(k-1) < t), every column loaded before any test. */
double wc_scan_ns(wc_ctx *c, int k);
/* count(c0 < t(s) & c1 < t(0.5)), or with && (branch != 0): c1 read only
 * by lanes where the first test holds; in the generated select kernel's
 * shape (8 rows per thread, unrolled; the filter returns early). */
double wc_and_ns(wc_ctx *c, double s, int branch);
/* reps instructions of class cls per row on values computed in registers
 * (no column reads; WC_OP_STR: lookups into a 2^20-word table). */
double wc_ops_ns(wc_ctx *c, int cls, int reps);
/* The row ids of rows with c0 < t(s) written by a warp-aggregated
 * compaction; *kept gets their number. */
double wc_compact_ns(wc_ctx *c, double s, size_t *kept);
/* Over the ascending row ids of rows with c0 < t(s) (as an order-keeping
 * compaction leaves them): count(c1[rid] < t(0.5)), or with ids_only the
 * ids read alone. *m gets the number of ids. */
double wc_gather_ns(wc_ctx *c, double s, int ids_only, size_t *m);
/* One empty kernel launch plus a 4-byte download that waits for it, the
 * average over iters, host-timed. */
double wc_launch_sync_ns(wc_ctx *c, int iters);

#ifdef __cplusplus
}
#endif

#endif
