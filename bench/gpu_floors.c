/* Prints the floors the GPU benchmark compares against: device-to-device
 * copy bandwidth, the radix-sort rate of the library's sort (64-bit keys)
 * and the pinned PCIe bandwidth that bounds moving an answer to the host.
 *   rf_gpu_floors [COPY_MIB [SORT_MKEYS]]
 *   rf_gpu_floors --moves MIB...   (what each way of moving a table of MIB
 *                                   between host and device runs at: a row
 *                                   of GB/s each, rf_cuda_measure_moves)
 * Output (one line each): "device NAME", "copy_gbs X", "sort_keys_per_s Y",
 * "pcie_d2h_gbs Z", "pcie_h2d_gbs W" (pinned memory, the downloads' chunks). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rf_cuda_prims.h"
#include "rf_prims.h"

static int moves(rf_cuda_ctx *c, int argc, char **argv)
{
    rf_prims_default_threads();   /* (the staging threads, as redfox has them) */
    printf("MiB staged_up staged_down staged_down_fresh pinned_up pinned_down host_register host_alloc arena_up "
           "arena_down\n");
    for (int i = 0; i < argc; i++) {
        rf_status st;
        rf_status_init(&st);
        rf_move_rates m;
        size_t mib = (size_t)atol(argv[i]);
        if (!rf_cuda_measure_moves(c, mib << 20, &m, &st)) {
            fprintf(stderr, "rf_gpu_floors: %s\n", st.message);
            return 1;
        }
        printf("%zu %.1f %.1f %.1f %.1f %.1f %.1f %.1f %.1f %.1f\n", mib, m.staged_up, m.staged_down,
               m.staged_down_fresh, m.pinned_up, m.pinned_down, m.host_register, m.host_alloc, m.arena_up, m.arena_down);
    }
    return 0;
}

int main(int argc, char **argv)
{
    bool moving = argc > 1 && strcmp(argv[1], "--moves") == 0;
    size_t mib = argc > 1 && !moving ? (size_t)atol(argv[1]) : 1024;
    size_t mkeys = argc > 2 && !moving ? (size_t)atol(argv[2]) : 128;
    if (rf_cuda_device_count() <= 0) {
        printf("skipped: no CUDA device\n");
        return 0;
    }
    rf_status st;
    rf_status_init(&st);
    rf_cuda_ctx *c = rf_cuda_ctx_new(0, &st);
    if (!c) {
        fprintf(stderr, "rf_gpu_floors: %s\n", st.message);
        return 1;
    }
    if (moving) {
        int rc = moves(c, argc - 2, argv + 2);
        rf_cuda_ctx_free(c);
        return rc;
    }
    double gbs = 0, rate = 0;
    if (!rf_cuda_measure_floors(c, mib << 20, mkeys * 1000000, &gbs, &rate, &st)) {
        fprintf(stderr, "rf_gpu_floors: %s\n", st.message);
        rf_cuda_ctx_free(c);
        return 1;
    }
    double d2h = 0, h2d = 0;
    if (!rf_cuda_measure_pcie(c, mib << 20, &d2h, &h2d, &st)) {
        fprintf(stderr, "rf_gpu_floors: %s\n", st.message);
        rf_cuda_ctx_free(c);
        return 1;
    }
    printf("device %s\ncopy_gbs %.1f\nsort_keys_per_s %.4g\npcie_d2h_gbs %.1f\npcie_h2d_gbs %.1f\n",
           rf_cuda_device_name(c), gbs, rate, d2h, h2d);
    rf_cuda_ctx_free(c);
    return 0;
}
