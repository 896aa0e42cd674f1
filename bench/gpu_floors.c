/* Prints the floors the GPU benchmark compares against: device-to-device
 * copy bandwidth, the radix-sort rate of the library's sort (64-bit keys)
 * and the pinned PCIe bandwidth that bounds moving an answer to the host.
 *   rf_gpu_floors [COPY_MIB [SORT_MKEYS]]
 * Output (one line each): "device NAME", "copy_gbs X", "sort_keys_per_s Y",
 * "pcie_d2h_gbs Z", "pcie_h2d_gbs W" (pinned memory, the downloads' chunks). */
#include <stdio.h>
#include <stdlib.h>

#include "rf_cuda_prims.h"

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? (size_t)atol(argv[1]) : 1024;
    size_t mkeys = argc > 2 ? (size_t)atol(argv[2]) : 128;
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
