/* Run-time code generation for compute stages: postfix rf_code -> CUDA
 * source (straight-line code, && / || as branches) -> NVRTC -> cubin, cached
 * in memory and on disk by a hash of the source and the target, loaded with
 * the driver API. NVRTC and the driver are reached through dlopen and
 * cudaGetDriverEntryPointByVersion, so the library links on machines
 * without them and falls back to the interpreter there. */
#include "cuda_internal.h"

#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- Text buffer ---- */
typedef struct sbuf {
    char *s;
    size_t len, cap;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) RF_PRINTF(2, 3);
static void sb_printf(sbuf *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n >= 0 && b->s && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        b->cap = (b->cap + (size_t)(n > 0 ? n : 0) + 1) * 2;
        b->s = rf_realloc(b->s, b->cap);
    }
}

/* ---- Generation ---- */
typedef struct gen {
    sbuf *b;
    const rf_instr *ins;
    int (*kid)[3];      /* operand instructions of each instruction */
    int al;
    bool join;
    int tmp;
} gen;

/* Operands of an instruction: RF_DOP_LOOKUP (prims.c's string tables) is
 * unary; the IR's ops as rf_expr_arity says. */
static int op_arity(int op) { return op == RF_DOP_LOOKUP ? 1 : rf_expr_arity((rf_exop)op); }

static void col_expr(gen *g, int k, char *out, size_t cap)
{
    if (!g->join || k < g->al)
        snprintf(out, cap, "l.c[%d][i]", k);
    else
        snprintf(out, cap, "r.c[%d][j]", k - g->al);
}

/* Emits statements computing instruction k; returns its variable number. */
static int emit(gen *g, int k)
{
    const rf_instr *in = &g->ins[k];
    int v;
    char col[64];
    switch (op_arity(in->op)) {
    case 0:
        v = g->tmp++;
        if (in->op == RF_EX_CONST) {
            sb_printf(g->b, "  uint64_t v%d = 0x%" PRIx64 "ull;\n", v, in->value);
        } else if (in->op == RF_EX_ROWID) { /* the row's position: i (left/map) or j (right) */
            sb_printf(g->b, "  uint64_t v%d = %s;\n", v, in->index ? "j" : "i");
        } else {
            col_expr(g, in->index, col, sizeof col);
            sb_printf(g->b, "  uint64_t v%d = %s;\n", v, col);
        }
        return v;
    case 1: {
        int a = emit(g, g->kid[k][0]);
        v = g->tmp++;
        if (in->op == RF_DOP_LOOKUP)
            sb_printf(g->b, "  uint64_t v%d; if (!rf_lookup(env, %dull, v%d, &v%d)) return false;\n", v,
                      (int)in->index, a, v);
        else
            sb_printf(g->b, "  uint64_t v%d; if (!rf_sops_unary(env, %d, %d, %d, v%d, &v%d)) return false;\n", v,
                      in->op, in->arg_type, in->type, a, v);
        return v;
    }
    case 3: {
        v = g->tmp++;
        if (in->op != RF_EX_IF) { /* string functions are tabulated or run on the host */
            sb_printf(g->b, "  uint64_t v%d = 0; return fail(env.err, %d, 0, %d);\n", v, RF_SERR_HOST_ONLY, in->op);
            return v;
        }
        /* if(c, x, y): each branch only where it is taken */
        int c = emit(g, g->kid[k][0]);
        sb_printf(g->b, "  uint64_t v%d;\n  if (v%d) {\n", v, c);
        int x = emit(g, g->kid[k][1]);
        sb_printf(g->b, "  v%d = v%d;\n  } else {\n", v, x);
        int y = emit(g, g->kid[k][2]);
        sb_printf(g->b, "  v%d = v%d;\n  }\n", v, y);
        return v;
    }
    default:
        if (in->op == RF_EX_AND || in->op == RF_EX_OR) {
            /* Short circuit: the right operand runs only when needed. */
            int a = emit(g, g->kid[k][0]);
            v = g->tmp++;
            bool and_ = in->op == RF_EX_AND;
            sb_printf(g->b, "  uint64_t v%d = %d;\n  if (%sv%d) {\n", v, and_ ? 0 : 1, and_ ? "" : "!", a);
            int b = emit(g, g->kid[k][1]);
            sb_printf(g->b, "  v%d = v%d != 0;\n  }\n", v, b);
            return v;
        }
        int a = emit(g, g->kid[k][0]);
        int b = emit(g, g->kid[k][1]);
        v = g->tmp++;
        bool cmp = rf_exop_is_comparison((rf_exop)in->op);
        sb_printf(g->b, "  uint64_t v%d; if (!rf_sops_binary(env, %d, %d, %d, v%d, v%d, &v%d)) return false;\n", v,
                  in->op, cmp ? in->arg_type : in->type, in->arg_type, a, b, v);
        return v;
    }
}

static void emit_stage(sbuf *b, const char *name, const rf_code *code, int al, bool join)
{
    sb_printf(b, "__device__ __forceinline__ bool %s(const RfCols &l, uint64_t i, const RfCols &r, uint64_t j, "
                 "const RfEnv &env, uint64_t *out)\n{\n  (void)l; (void)r; (void)i; (void)j;\n", name);
    if (code->n == 0) {
        sb_printf(b, "  *out = 1;\n  return true;\n}\n");
        return;
    }
    int (*kid)[3] = rf_malloc((size_t)code->n * sizeof *kid);
    int *stack = rf_malloc((size_t)code->n * sizeof *stack), sp = 0;
    for (int k = 0; k < code->n; k++) {
        int ar = op_arity(code->ins[k].op);
        kid[k][0] = kid[k][1] = kid[k][2] = -1;
        for (int i = ar - 1; i >= 0; i--)
            kid[k][i] = stack[--sp];
        stack[sp++] = k;
    }
    gen g = {b, code->ins, kid, al, join, 0};
    int v = emit(&g, code->n - 1);
    sb_printf(b, "  *out = v%d;\n  return true;\n}\n", v);
    free(kid);
    free(stack);
}

char *rf_codegen_source(bool join, int al, const rf_code *filter, int nproj, const rf_code *proj)
{
    sbuf b = {0};
    /* Prelude: the types and constants rf_scalar.cuh expects. */
    sb_printf(&b, "// Red Fox generated compute stage (%s)\n"
                  "typedef unsigned long long uint64_t; typedef long long int64_t;\n"
                  "typedef unsigned int uint32_t; typedef int int32_t; typedef unsigned char uint8_t;\n"
                  "#define INT32_MIN (-2147483647 - 1)\n#define INT32_MAX 2147483647\n"
                  "#define INT64_MIN (-9223372036854775807LL - 1)\n#define INT64_MAX 9223372036854775807LL\n",
              join ? "join" : "map");
    static const struct { const char *name; int v; } k[] = {
        {"RF_EX_CONST", RF_EX_CONST}, {"RF_EX_COL", RF_EX_COL}, {"RF_EX_NEG", RF_EX_NEG},
        {"RF_EX_NOT", RF_EX_NOT}, {"RF_EX_CAST", RF_EX_CAST}, {"RF_EX_ADD", RF_EX_ADD},
        {"RF_EX_SUB", RF_EX_SUB}, {"RF_EX_MUL", RF_EX_MUL}, {"RF_EX_DIV", RF_EX_DIV},
        {"RF_EX_MOD", RF_EX_MOD}, {"RF_EX_EQ", RF_EX_EQ}, {"RF_EX_NE", RF_EX_NE},
        {"RF_EX_LT", RF_EX_LT}, {"RF_EX_LE", RF_EX_LE}, {"RF_EX_GT", RF_EX_GT},
        {"RF_EX_GE", RF_EX_GE}, {"RF_EX_AND", RF_EX_AND}, {"RF_EX_OR", RF_EX_OR},
        {"RF_TYPE_INT32", RF_TYPE_INT32}, {"RF_TYPE_INT64", RF_TYPE_INT64},
        {"RF_TYPE_FLOAT64", RF_TYPE_FLOAT64}, {"RF_TYPE_BOOL", RF_TYPE_BOOL},
        {"RF_TYPE_STRING", RF_TYPE_STRING}, {"RF_TYPE_DATE", RF_TYPE_DATE},
        {"RF_TYPE_DECIMAL0", RF_TYPE_DECIMAL0}, {"RF_TYPE_DECIMAL18", RF_TYPE_DECIMAL18},
        {"RF_EX_IF", RF_EX_IF}, {"RF_EX_YEAR", RF_EX_YEAR}, {"RF_EX_MONTH", RF_EX_MONTH},
        {"RF_EX_DAY", RF_EX_DAY}, {"RF_EX_ADD_MONTHS", RF_EX_ADD_MONTHS},
        {"RF_EX_ADD_YEARS", RF_EX_ADD_YEARS}, {"RF_EX_SUBSTR", RF_EX_SUBSTR},
        {"RF_EX_STRLEN", RF_EX_STRLEN}, {"RF_EX_CONCAT", RF_EX_CONCAT}, {"RF_EX_LIKE", RF_EX_LIKE},
        {"RF_EX_STARTS_WITH", RF_EX_STARTS_WITH}, {"RF_EX_ENDS_WITH", RF_EX_ENDS_WITH},
        {"RF_EX_CONTAINS", RF_EX_CONTAINS},
    };
    for (size_t i = 0; i < sizeof k / sizeof *k; i++)
        sb_printf(&b, "#define %s %d\n", k[i].name, k[i].v);
    sb_printf(&b, "#define RF_DOP_LOOKUP %d\n", RF_DOP_LOOKUP);
    sb_printf(&b, "struct RfErr { int code; int aux; uint64_t value; uint64_t value2; };\n"
                  "struct RfCols { const uint64_t *c[%d]; };\nstruct RfWCols { uint64_t *c[%d]; };\n",
              RF_CUDA_MAX_COLS, RF_CUDA_MAX_COLS);
    /* rf_scalar_ops.h twice: first its fault codes and helpers (which
     * rf_scalar.cuh uses), then, with rf_scalar.cuh's context defined, the
     * operators (each part has its own include guard). */
    sb_printf(&b, "%s\n%s\n%s\n", rf_scalar_ops_text, rf_scalar_cuh_text, rf_scalar_ops_text);
    sb_printf(&b, "__device__ __forceinline__ uint64_t owner(const uint64_t *off, uint64_t n, uint64_t o)\n"
                  "{ uint64_t lo = 0, hi = n; while (hi - lo > 1) { uint64_t mid = lo + (hi - lo) / 2;\n"
                  "  if (off[mid] <= o) lo = mid; else hi = mid; } return lo; }\n");
    sb_printf(&b, "%s", RF_CODEGEN_STAGES_MARK);
    rf_code none = {0, NULL};
    emit_stage(&b, "stage_filter", filter ? filter : &none, al, join);
    for (int p = 0; p < nproj; p++) {
        char name[32];
        snprintf(name, sizeof name, "stage_proj%d", p);
        emit_stage(&b, name, &proj[p], al, join);
    }
    const char *row = join ? "uint64_t i = owner(off, nl, o), j = lo[i] + (o - off[i]);"
                           : "uint64_t i = o, j = o;";
    sb_printf(&b,
              "#define LOOP for (uint64_t o = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; o < total; "
              "o += (uint64_t)gridDim.x * blockDim.x)\n"
              "extern \"C\" __global__ void rf_filter(RfCols l, RfCols r, const uint64_t *lo, const uint64_t *off,\n"
              "  uint64_t nl, uint64_t total, RfEnv env, uint8_t *flags)\n"
              "{ (void)lo; (void)off; (void)nl; LOOP { %s uint64_t v = 0; flags[o] = stage_filter(l, i, r, j, env, &v) && v; } }\n"
              "extern \"C\" __global__ void rf_emit(RfCols l, RfCols r, const uint64_t *lo, const uint64_t *off,\n"
              "  uint64_t nl, uint64_t total, const uint8_t *flags, const uint64_t *pos, RfEnv env, RfWCols out)\n"
              "{ (void)lo; (void)off; (void)nl; LOOP { if (flags && !flags[o]) continue; %s\n"
              "  uint64_t dst = pos ? pos[o] : o, v;\n",
              row, row);
    for (int p = 0; p < nproj; p++)
        sb_printf(&b, "  if (!stage_proj%d(l, i, r, j, env, &v)) continue; out.c[%d][dst] = v;\n", p, p);
    sb_printf(&b, "} }\n");
    return b.s;
}

/* ---- NVRTC, driver API, caches ---- */
typedef int (*nvrtc_create_t)(void **, const char *, const char *, int, const char *const *, const char *const *);
typedef int (*nvrtc_compile_t)(void *, int, const char *const *);
typedef int (*nvrtc_size_t)(void *, size_t *);
typedef int (*nvrtc_get_t)(void *, char *);
typedef int (*nvrtc_destroy_t)(void **);
typedef int (*nvrtc_version_t)(int *, int *);
typedef CUresult (*cu_load_t)(CUmodule *, const void *);
typedef CUresult (*cu_getfn_t)(CUfunction *, CUmodule, const char *);
typedef CUresult (*cu_launch_t)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                CUstream, void **, void **);
typedef CUresult (*cu_unload_t)(CUmodule);

typedef struct cg_module {
    uint64_t hash;
    CUmodule mod;
    CUfunction filter, emit;
} cg_module;

typedef struct cg_state {
    bool tried, ok;
    void *lib;
    nvrtc_create_t create;
    nvrtc_compile_t compile;
    nvrtc_size_t cubin_size, log_size;
    nvrtc_get_t cubin, log;
    nvrtc_destroy_t destroy;
    cu_load_t load;
    cu_getfn_t getfn;
    cu_launch_t launch;
    cu_unload_t unload;
    char arch[32];
    int nvrtc_major, nvrtc_minor;
    RF_VEC(cg_module) mods;
    rf_cuda_codegen_stats stats;
} cg_state;

static bool cg_init(rf_cuda_ctx *c, cg_state *g)
{
    g->tried = true;
    const char *libs[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
    for (size_t i = 0; i < 3 && !g->lib; i++)
        g->lib = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
    if (!g->lib)
        return false;
    /* dlsym returns void *; the cast through a union keeps -Wpedantic quiet. */
#define SYM(field, name)                                                              \
    do {                                                                              \
        union { void *p; __typeof__(g->field) f; } u_;                                \
        u_.p = dlsym(g->lib, name);                                                   \
        if (!u_.p)                                                                    \
            return false;                                                             \
        g->field = u_.f;                                                              \
    } while (0)
    nvrtc_version_t version;
    SYM(create, "nvrtcCreateProgram");
    SYM(compile, "nvrtcCompileProgram");
    SYM(cubin_size, "nvrtcGetCUBINSize");
    SYM(cubin, "nvrtcGetCUBIN");
    SYM(log_size, "nvrtcGetProgramLogSize");
    SYM(log, "nvrtcGetProgramLog");
    SYM(destroy, "nvrtcDestroyProgram");
    {
        union { void *p; nvrtc_version_t f; } u;
        u.p = dlsym(g->lib, "nvrtcVersion");
        if (!u.p)
            return false;
        version = u.f;
    }
#undef SYM
    version(&g->nvrtc_major, &g->nvrtc_minor);
#define DRV(field, name)                                                              \
    do {                                                                              \
        union { void *p; __typeof__(g->field) f; } u_;                                \
        enum cudaDriverEntryPointQueryResult q_;                                      \
        if (cudaGetDriverEntryPointByVersion(name, &u_.p, 12000, cudaEnableDefault,   \
                                             &q_) != cudaSuccess || !u_.p) {          \
            (void)cudaGetLastError();                                                 \
            return false;                                                             \
        }                                                                             \
        g->field = u_.f;                                                              \
    } while (0)
    DRV(load, "cuModuleLoadData");
    DRV(getfn, "cuModuleGetFunction");
    DRV(launch, "cuLaunchKernel");
    DRV(unload, "cuModuleUnload");
#undef DRV
    struct cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, c->device) != cudaSuccess)
        return false;
    snprintf(g->arch, sizeof g->arch, "sm_%d%d", prop.major, prop.minor);
    return true;
}

static uint64_t fnv1a(const char *s, uint64_t h)
{
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

static char *cache_dir(void)
{
    const char *env = getenv("RF_CUDA_CACHE");
    if (env && *env)
        return rf_strdup(env);
    const char *home = getenv("HOME");
    if (!home || !*home)
        return NULL;
    char *base = rf_sprintf("%s/.cache", home), *dir = rf_sprintf("%s/.cache/redfox", home);
    mkdir(base, 0755);
    free(base);
    return dir;
}

static void *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 65536;
            buf = rf_realloc(buf, cap);
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0)
            break;
    }
    fclose(f);
    *len = n;
    return buf;
}

/* Writes to a temporary name and renames: concurrent runs never see half a
 * cubin. */
static void write_all(const char *path, const void *data, size_t len)
{
    char *tmp = rf_sprintf("%s.%ld.tmp", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (f) {
        bool ok = fwrite(data, 1, len, f) == len;
        ok = fclose(f) == 0 && ok;
        if (ok)
            rename(tmp, path);
        else
            remove(tmp);
    }
    free(tmp);
}

static bool compile_src(cg_state *g, const char *src, char **cubin, size_t *len)
{
    void *prog = NULL;
    if (g->create(&prog, src, "rf_stage.cu", 0, NULL, NULL) != 0)
        return false;
    char archopt[64];
    snprintf(archopt, sizeof archopt, "--gpu-architecture=%s", g->arch);
    const char *opts[] = {archopt, "--fmad=false", "-std=c++17", "-default-device"};
    int rc = g->compile(prog, 4, opts);
    if (rc != 0) {
        size_t n = 0;
        g->log_size(prog, &n);
        char *log = rf_malloc(n + 1);
        g->log(prog, log);
        log[n] = '\0';
        fprintf(stderr, "redfox: warning: NVRTC failed, using the interpreter:\n%s\n", log);
        free(log);
        g->destroy(&prog);
        return false;
    }
    *len = 0;
    g->cubin_size(prog, len);
    *cubin = rf_malloc(*len ? *len : 1);
    bool ok = g->cubin(prog, *cubin) == 0;
    g->destroy(&prog);
    return ok;
}

int rf_codegen_compile_only(const char *src, const char *arch, char **log)
{
    *log = NULL;
    const char *libs[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
    void *lib = NULL;
    for (size_t i = 0; i < 3 && !lib; i++)
        lib = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return -1;
    cg_state g;
    memset(&g, 0, sizeof g);
    int rc = -1;
#define SYM1(field, name)                                                             \
    do {                                                                              \
        union { void *p; __typeof__(g.field) f; } u_;                                 \
        u_.p = dlsym(lib, name);                                                      \
        if (!u_.p)                                                                    \
            goto out;                                                                 \
        g.field = u_.f;                                                               \
    } while (0)
    SYM1(create, "nvrtcCreateProgram");
    SYM1(compile, "nvrtcCompileProgram");
    SYM1(cubin_size, "nvrtcGetCUBINSize");
    SYM1(cubin, "nvrtcGetCUBIN");
    SYM1(log_size, "nvrtcGetProgramLogSize");
    SYM1(log, "nvrtcGetProgramLog");
    SYM1(destroy, "nvrtcDestroyProgram");
#undef SYM1
    snprintf(g.arch, sizeof g.arch, "%s", arch);
    void *prog = NULL;
    if (g.create(&prog, src, "rf_stage.cu", 0, NULL, NULL) != 0)
        goto out;
    char archopt[64];
    snprintf(archopt, sizeof archopt, "--gpu-architecture=%s", g.arch);
    const char *opts[] = {archopt, "--fmad=false", "-std=c++17", "-default-device"};
    int ok = g.compile(prog, 4, opts);
    size_t n = 0;
    g.log_size(prog, &n);
    *log = rf_malloc(n + 1);
    g.log(prog, *log);
    (*log)[n] = '\0';
    g.destroy(&prog);
    rc = ok == 0 ? 1 : 0;
out:
    dlclose(lib);
    return rc;
}

bool rf_codegen_kernels(rf_cuda_ctx *c, const char *src, void **filter_fn, void **emit_fn)
{
    if (!c->cg)
        c->cg = rf_calloc(1, sizeof(cg_state));
    cg_state *g = c->cg;
    if (!g->tried)
        g->ok = cg_init(c, g);
    if (!g->ok)
        return false;
    char salt[96];
    snprintf(salt, sizeof salt, "%s nvrtc %d.%d", g->arch, g->nvrtc_major, g->nvrtc_minor);
    uint64_t h = fnv1a(src, fnv1a(salt, 14695981039346656037ull));
    for (size_t i = 0; i < g->mods.len; i++)
        if (g->mods.items[i].hash == h) {
            g->stats.mem_hits++;
            *filter_fn = g->mods.items[i].filter;
            *emit_fn = g->mods.items[i].emit;
            return true;
        }
    double t0 = rf_now();
    char *dir = cache_dir(), *path = NULL;
    if (dir) {
        mkdir(dir, 0755);
        path = rf_sprintf("%s/%016" PRIx64 "-%s.cubin", dir, h, g->arch);
    }
    size_t len = 0;
    char *cubin = path ? read_all(path, &len) : NULL;
    bool from_disk = cubin != NULL && len > 0;
    if (!from_disk) {
        free(cubin);
        cubin = NULL;
        if (!compile_src(g, src, &cubin, &len)) {
            g->stats.failures++;
            free(cubin);
            free(dir);
            free(path);
            return false;
        }
        g->stats.compiled++;
        g->stats.compile_seconds += rf_now() - t0;
        if (path)
            write_all(path, cubin, len);
    }
    double t1 = rf_now();
    cg_module m = {h, NULL, NULL, NULL};
    bool ok = g->load(&m.mod, cubin) == CUDA_SUCCESS && g->getfn(&m.filter, m.mod, "rf_filter") == CUDA_SUCCESS &&
              g->getfn(&m.emit, m.mod, "rf_emit") == CUDA_SUCCESS;
    free(cubin);
    free(dir);
    free(path);
    if (!ok) {
        g->stats.failures++;
        return false;
    }
    g->stats.load_seconds += rf_now() - t1;
    if (from_disk)
        g->stats.cache_hits++;
    RF_PUSH(g->mods, m);
    *filter_fn = m.filter;
    *emit_fn = m.emit;
    return true;
}

bool rf_codegen_launch(rf_cuda_ctx *c, void *fn, size_t n, void **params, rf_status *st)
{
    cg_state *g = c->cg;
    if (n == 0)
        return true;
    size_t grid = (n + 255) / 256;
    if (grid > 65535u * 16u)
        grid = 65535u * 16u;
    CUresult r = g->launch((CUfunction)fn, (unsigned)grid, 1, 1, 256, 1, 1, 0, (CUstream)c->stream, params, NULL);
    if (r != CUDA_SUCCESS)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "launch of a generated kernel failed (CUresult %d)", (int)r);
    return true;
}

void rf_codegen_free(rf_cuda_ctx *c)
{
    cg_state *g = c->cg;
    if (!g)
        return;
    for (size_t i = 0; i < g->mods.len; i++)
        g->unload(g->mods.items[i].mod);
    RF_VEC_FREE(g->mods);
    if (g->lib)
        dlclose(g->lib);
    free(g);
    c->cg = NULL;
}

void rf_cuda_set_codegen(rf_cuda_ctx *c, bool on) { c->codegen = on; }

void rf_cuda_codegen_get_stats(const rf_cuda_ctx *c, rf_cuda_codegen_stats *out)
{
    const cg_state *g = c->cg;
    if (g)
        *out = g->stats;
    else
        memset(out, 0, sizeof *out);
}
