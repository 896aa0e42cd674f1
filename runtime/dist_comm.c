/* Finding and loading the MPI communicator module (dist_comm.h). */
#include "dist_comm.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool rf_comm_launched_by_mpi(void)
{
    static const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
        if (getenv(vars[i]))
            return true;
    return false;
}

#define MODULE_NAME "librf_comm_mpi.so"

/* dlopen's handle for the first of the candidate paths that loads;
 * RTLD_GLOBAL because Open MPI's own plugins resolve libmpi's symbols. */
static void *load_module(char *err, size_t cap)
{
    const char *env = getenv("RF_COMM_MPI_LIB");
    if (env && *env) {
        void *h = dlopen(env, RTLD_NOW | RTLD_GLOBAL);
        if (!h)
            snprintf(err, cap, "cannot load RF_COMM_MPI_LIB=%s: %s", env, dlerror());
        return h;
    }
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        snprintf(err, cap, "cannot find the MPI module %s (set RF_COMM_MPI_LIB)", MODULE_NAME);
        return NULL;
    }
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    const char *rel[] = {"", "/../lib/redfox"};
    char first_error[512] = "";
    for (size_t i = 0; i < sizeof rel / sizeof *rel; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s%s/%s", exe, rel[i], MODULE_NAME);
        if (access(path, F_OK) != 0)
            continue;
        void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
        if (h)
            return h;
        if (!first_error[0])
            snprintf(first_error, sizeof first_error, "%s", dlerror());
    }
    if (first_error[0])
        snprintf(err, cap, "cannot load the MPI module: %s", first_error);
    else
        snprintf(err, cap, "this redfox was built without MPI (no %s beside it; install libopenmpi-dev "
                 "and rebuild, or set RF_COMM_MPI_LIB)", MODULE_NAME);
    return NULL;
}

rf_comm *rf_comm_mpi_open(char *err, size_t cap)
{
    void *h = load_module(err, cap);
    if (!h)
        return NULL;
    rf_comm_mpi_open_fn open_fn;
    *(void **)&open_fn = dlsym(h, RF_COMM_MPI_ENTRY);
    if (!open_fn) {
        snprintf(err, cap, "the MPI module has no %s", RF_COMM_MPI_ENTRY);
        return NULL;
    }
    /* The module stays loaded for the life of the process (MPI cannot be
     * initialised twice anyway). */
    return open_fn(err, cap);
}
