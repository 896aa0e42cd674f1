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

/* dlopen's handle for the first of the candidate paths of module `name`
 * (beside the executable, then ../lib/redfox; the variable envvar names a
 * path that replaces them) that loads; RTLD_GLOBAL because Open MPI's own
 * plugins resolve libmpi's symbols. `what` ("MPI") and `missing` (how to
 * get it) word the errors. */
static void *load_module(const char *name, const char *envvar, const char *what, const char *missing, char *err,
                         size_t cap)
{
    const char *env = getenv(envvar);
    if (env && *env) {
        void *h = dlopen(env, RTLD_NOW | RTLD_GLOBAL);
        if (!h)
            snprintf(err, cap, "cannot load %s=%s: %s", envvar, env, dlerror());
        return h;
    }
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        snprintf(err, cap, "cannot find the %s module %s (set %s)", what, name, envvar);
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
        snprintf(path, sizeof path, "%s%s/%s", exe, rel[i], name);
        if (access(path, F_OK) != 0)
            continue;
        void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
        if (h)
            return h;
        if (!first_error[0])
            snprintf(first_error, sizeof first_error, "%s", dlerror());
    }
    if (first_error[0])
        snprintf(err, cap, "cannot load the %s module: %s", what, first_error);
    else
        snprintf(err, cap, "this redfox was built without %s (no %s beside it; %s and rebuild, or set %s)", what,
                 name, missing, envvar);
    return NULL;
}

rf_comm *rf_comm_mpi_open(char *err, size_t cap)
{
    void *h = load_module("librf_comm_mpi.so", "RF_COMM_MPI_LIB", "MPI", "install libopenmpi-dev", err, cap);
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

/* The NCCL module, loaded once (the launcher's rank 0 asks it for the id,
 * then opens its communicator with it). */
static void *nccl_module(char *err, size_t cap)
{
    static void *h;
    if (!h)
        h = load_module("librf_comm_nccl.so", "RF_COMM_NCCL_LIB", "NCCL",
                        "build with the CUDA toolkit's NCCL (nccl.h, libnccl)", err, cap);
    return h;
}

bool rf_comm_nccl_unique_id(void *id, size_t len, char *err, size_t cap)
{
    void *h = nccl_module(err, cap);
    if (!h)
        return false;
    rf_comm_nccl_id_fn fn;
    *(void **)&fn = dlsym(h, RF_COMM_NCCL_ID_ENTRY);
    if (!fn) {
        snprintf(err, cap, "the NCCL module has no %s", RF_COMM_NCCL_ID_ENTRY);
        return false;
    }
    return fn(id, len, err, cap);
}

rf_comm *rf_comm_nccl_open(int rank, int size, const void *id, size_t len, int device, char *err, size_t cap)
{
    void *h = nccl_module(err, cap);
    if (!h)
        return NULL;
    rf_comm_nccl_open_fn fn;
    *(void **)&fn = dlsym(h, RF_COMM_NCCL_ENTRY);
    if (!fn) {
        snprintf(err, cap, "the NCCL module has no %s", RF_COMM_NCCL_ENTRY);
        return NULL;
    }
    return fn(rank, size, id, len, device, err, cap);
}
