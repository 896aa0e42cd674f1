#include "../backend.h"
rf_backend *rf_backend_gpu_new(rf_status *st)
{
    rf_fail(st, RF_EXIT_RUNTIME_ERROR, "this redfox was built without the GPU backend");
    return NULL;
}

void rf_backend_gpu_set_memory_budget(size_t bytes) { (void)bytes; }

char *rf_gpu_fused_source(const rf_hprogram *p, const rf_kernel *fk)
{
    (void)p, (void)fk;
    return NULL;
}
