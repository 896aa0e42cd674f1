/* Run-time code generation for compute stages: postfix rf_code -> CUDA
 * source (straight-line code, && / || as branches) -> NVRTC -> cubin, cached
 * in memory and on disk by a hash of the source and the target, loaded with
 * the driver API. NVRTC and the driver are reached through dlopen and
 * cudaGetDriverEntryPointByVersion, so the library links on machines
 * without them and falls back to the interpreter there. */
#include "cuda_internal.h"
#include "codegen_plan.h"

#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
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
    const int *pre_slot; /* column -> word of the row's preloaded values (pre), -1 or NULL: from memory */
} gen;

/* Operands of an instruction: RF_DOP_LOOKUP (prims.c's string tables) is
 * unary; the IR's ops as rf_expr_arity says. */
static int op_arity(int op) { return op == RF_DOP_LOOKUP ? 1 : rf_expr_arity((rf_exop)op); }

static void col_expr(gen *g, int k, char *out, size_t cap)
{
    if (!g->join && g->pre_slot && k >= 0 && k < RF_CUDA_MAX_COLS && g->pre_slot[k] >= 0)
        snprintf(out, cap, "pre[%d]", g->pre_slot[k]);
    else if (!g->join || k < g->al)
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

/* A stage: the function `name` computing code over a row (l, i / r, j)
 * into *out, false on a fault (recorded in env.err). */
/* The parameter and argument a stage has when some columns come preloaded
 * (the reducing gather's value columns: emit_value_preload). */
#define PRE_PARAM(ps) ((ps) ? ", const uint64_t *pre" : "")
#define PRE_ARG(ps) ((ps) ? ", pre" : "")

static void emit_stage_pre(sbuf *b, const char *name, const rf_code *code, int al, bool join, const int *pre_slot)
{
    sb_printf(b, "__device__ __forceinline__ bool %s(const RfCols &l, uint64_t i, const RfCols &r, uint64_t j, "
                 "const RfEnv &env%s, uint64_t *out)\n{\n  (void)l; (void)r; (void)i; (void)j;%s\n", name,
              PRE_PARAM(pre_slot), pre_slot ? " (void)pre;" : "");
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
    gen g = {b, code->ins, kid, al, join, 0, pre_slot};
    int v = emit(&g, code->n - 1);
    sb_printf(b, "  *out = v%d;\n  return true;\n}\n", v);
    free(kid);
    free(stack);
}

static void emit_stage(sbuf *b, const char *name, const rf_code *code, int al, bool join)
{
    emit_stage_pre(b, name, code, al, join, NULL);
}

static void sb_append(sbuf *b, const char *text, size_t len)
{
    if (b->len + len + 1 > b->cap) {
        b->cap = (b->len + len + 1) * 2;
        b->s = rf_realloc(b->s, b->cap);
    }
    memcpy(b->s + b->len, text, len);
    b->len += len;
    b->s[b->len] = '\0';
}

/* The prelude after its first line is the same text for every kernel
 * (~40 KB: the scalar operators): made once per process, since making it
 * with sb_printf took ~0.1 ms of every generated kernel's first run. */
static sbuf prelude_text;
static pthread_once_t prelude_once = PTHREAD_ONCE_INIT;

static void make_prelude(void)
{
    sbuf *b = &prelude_text;
    /* Prelude: the types and constants rf_scalar.cuh expects. */
    sb_printf(b, "typedef unsigned long long uint64_t; typedef long long int64_t;\n"
                  "typedef unsigned int uint32_t; typedef int int32_t; typedef unsigned char uint8_t;\n"
                  "#define INT32_MIN (-2147483647 - 1)\n#define INT32_MAX 2147483647\n"
                  "#define INT64_MIN (-9223372036854775807LL - 1)\n#define INT64_MAX 9223372036854775807LL\n");
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
        sb_printf(b, "#define %s %d\n", k[i].name, k[i].v);
    sb_printf(b, "#define RF_DOP_LOOKUP %d\n#define RF_TAB_BITS (1ull << 63)\n", RF_DOP_LOOKUP);
    sb_printf(b, "struct RfErr { int code; int aux; uint64_t value; uint64_t value2; };\n"
                  "struct RfCols { const uint64_t *c[%d]; };\nstruct RfWCols { uint64_t *c[%d]; };\n",
              RF_CUDA_MAX_COLS, RF_CUDA_MAX_COLS);
    /* rf_scalar_ops.h twice: first its fault codes and helpers (which
     * rf_scalar.cuh uses), then, with rf_scalar.cuh's context defined, the
     * operators (each part has its own include guard). */
    sb_printf(b, "%s\n%s\n%s\n", rf_scalar_ops_text, rf_scalar_cuh_text, rf_scalar_ops_text);
    sb_printf(b, "__device__ __forceinline__ uint64_t owner(const uint64_t *off, uint64_t n, uint64_t o)\n"
                  "{ uint64_t lo = 0, hi = n; while (hi - lo > 1) { uint64_t mid = lo + (hi - lo) / 2;\n"
                  "  if (off[mid] <= o) lo = mid; else hi = mid; } return lo; }\n");
    sb_printf(b, "%s", RF_CODEGEN_STAGES_MARK);
}

/* The types, constants and scalar operators every generated module starts
 * with; `explain --cuda` prints what follows RF_CODEGEN_STAGES_MARK. */
static void emit_prelude(sbuf *b, const char *what)
{
    pthread_once(&prelude_once, make_prelude);
    sb_printf(b, "// Red Fox generated %s\n", what);
    sb_append(b, prelude_text.s, prelude_text.len);
}

const char *rf_codegen_select_name(int nparts, int part)
{
    static const char *const names[RF_CG_MAX_PARTS] = {"rf_select_p0", "rf_select_p1", "rf_select_p2",
                                                       "rf_select_p3", "rf_select_p4", "rf_select_p5",
                                                       "rf_select_p6", "rf_select_p7"};
    return nparts <= 1 ? "rf_select" : names[part];
}

/* The filter as its plan says (codegen_plan.h): a stage stage_c<i> per
 * conjunct, then per kernel of the plan (part) a filter function,
 * `stage_filter` for a plan of one part, else stage_filter_p<q>, that
 * evaluates that part's conjuncts in plan order. A group (conjuncts joined
 * by &) computes all of its conjuncts and ands their truth values, no
 * branch between them; && between groups returns early, so the later
 * groups run only on the lanes still alive. A fault returns false at once,
 * as the unplanned stage does (the caller discards the kernel's result).
 * Parts after the first see only the rows the earlier parts kept (the
 * kernels pass row ids), so each part's filter is the conjunction of its
 * own conjuncts. */
static void emit_planned_filter(sbuf *b, bool join, int al, const rf_cg_plan *pl, const int *pre_slot)
{
    const rf_selplan *p = &pl->plan;
    char text[RF_SELPLAN_FMT_MAX];
    sb_printf(b, "// select plan %s (docs/weaver.md s. 5): conjuncts in plan order; & both evaluated,\n"
                 "// no branch; && the rest only on lanes still alive; | a new kernel over row ids\n",
              rf_selplan_format(p, text, sizeof text));
    for (int c = 0; c < pl->split.n; c++) {
        char name[32];
        snprintf(name, sizeof name, "stage_c%d", c);
        emit_stage_pre(b, name, &pl->split.conj[c].code, al, join, pre_slot);
    }
    for (int q = 0; q < pl->nparts; q++) {
        char name[32];
        if (pl->nparts == 1)
            snprintf(name, sizeof name, "stage_filter");
        else
            snprintf(name, sizeof name, "stage_filter_p%d", q);
        sb_printf(b,
                  "__device__ __forceinline__ bool %s(const RfCols &l, uint64_t i, const RfCols &r, uint64_t j, "
                  "const RfEnv &env%s, uint64_t *out)\n{\n  uint64_t c = 0, g;\n  *out = 0;\n",
                  name, PRE_PARAM(pre_slot));
        for (int a = pl->part_start[q]; a < pl->part_start[q + 1];) {
            int e = a + 1; /* the group [a, e) */
            while (e < pl->part_start[q + 1] && p->conn[e - 1] == RF_SEL_AND)
                e++;
            sb_printf(b, "  g = 1; //");
            for (int x = a; x < e; x++)
                sb_printf(b, " %d%s", p->order[x], x + 1 < e ? " &" : "");
            sb_printf(b, "\n");
            for (int x = a; x < e; x++)
                sb_printf(b, "  if (!stage_c%d(l, i, r, j, env%s, &c)) return false;\n  g &= (uint64_t)(c != 0);\n",
                          p->order[x], PRE_ARG(pre_slot));
            sb_printf(b, "  if (!g) return true;%s\n", e < pl->part_start[q + 1] ? " // &&" : "");
            a = e;
        }
        sb_printf(b, "  *out = 1;\n  return true;\n}\n");
    }
}

/* stage_filter (or the plan's part filters) and stage_proj0..nproj-1 over
 * a row (MAP) or candidate pair (JOIN). */
static void emit_row_stages_pre(sbuf *b, bool join, int al, const rf_code *filter, int nproj, const rf_code *proj,
                                const rf_cg_plan *plan, const int *pre_slot)
{
    rf_code none = {0, NULL};
    if (plan)
        emit_planned_filter(b, join, al, plan, pre_slot);
    else
        emit_stage_pre(b, "stage_filter", filter ? filter : &none, al, join, pre_slot);
    for (int p = 0; p < nproj; p++) {
        char name[32];
        snprintf(name, sizeof name, "stage_proj%d", p);
        emit_stage_pre(b, name, &proj[p], al, join, pre_slot);
    }
}

static void emit_row_stages(sbuf *b, bool join, int al, const rf_code *filter, int nproj, const rf_code *proj,
                            const rf_cg_plan *plan)
{
    emit_row_stages_pre(b, join, al, filter, nproj, proj, plan, NULL);
}

char *rf_codegen_source(bool join, int al, const rf_code *filter, int nproj, const rf_code *proj)
{
    sbuf b = {0};
    emit_prelude(&b, join ? "compute stage (join)" : "compute stage (map)");
    emit_row_stages(&b, join, al, filter, nproj, proj, NULL);
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

/* ---- The reducing gather as one kernel ---- */

void rf_reduce_layout_of(int nkeys, int naggs, const rf_aggfn *fns, rf_reduce_layout *lay)
{
    memset(lay, 0, sizeof *lay);
    lay->words = 1; /* the count */
    for (int j = 0; j < naggs && j < RF_CUDA_MAX_COLS; j++) {
        rf_aggfn f = fns[j];
        lay->kind[j] = f == RF_AGG_COUNT ? RF_REDUCE_COUNT
                       : f == RF_AGG_MIN ? RF_REDUCE_MIN
                       : f == RF_AGG_MAX ? RF_REDUCE_MAX
                                         : RF_REDUCE_SUM;
        lay->width[j] = lay->kind[j] == RF_REDUCE_COUNT ? 0 : lay->kind[j] == RF_REDUCE_SUM ? 2 : 1;
        lay->off[j] = lay->words;
        lay->words += lay->width[j];
    }
    /* A block's table within 32 KB of shared memory (several blocks share
     * an SM), at least 32 slots, at most 256. */
    int per_slot = lay->words * 8 + (nkeys > 0 ? nkeys : 1) * 8 + 4;
    for (int sh = 256; sh >= 32; sh /= 2)
        if (sh * per_slot <= 32 * 1024) {
            lay->shared_slots = sh;
            break;
        }
}

/* stage_preload(l, i, w) and stage_fence(w): the loads of the columns
 * that the group keys and the aggregates' arguments read, issued for all RI
 * rows of a step before any filter runs, then each word used by an empty
 * volatile asm, so that the compiler neither drops nor sinks them (the
 * value stages' own loads of the same words are forwarded from these).
 * Why: otherwise a row's value columns are loaded only once its filter is
 * known, a second memory round trip per step, and the kernel waits on
 * latency (ncu on the H100, pattern (e): 1.6 TB/s, 62% of stalls on the
 * L1TEX scoreboard). The fences come after all the loads: a fence waits
 * for its word, so one per load would issue them one at a time. The bytes
 * are the copy floor's anyway: a sector of 4 rows is read unless all 4
 * fail the filter. The filter's own columns stay as its select plan loads
 * them. Maps only: a join's right rows are not contiguous, so a row that
 * fails costs a sector of its own. */
/* stage_preload / stage_fence / NPRE over the columns col[k] (maps only);
 * pre_slot[k] := the word of column k in a row's preloaded values, or -1. */
static int emit_preload_fns(sbuf *b, const bool *col, int *pre_slot)
{
    int n = 0;
    sb_printf(b, "__device__ __forceinline__ void stage_preload(const RfCols &l, uint64_t i, uint64_t *w)\n{\n"
                 "  (void)l; (void)i; (void)w;\n");
    for (int k = 0; k < RF_CUDA_MAX_COLS; k++) {
        pre_slot[k] = col[k] ? n : -1;
        if (col[k])
            sb_printf(b, "  w[%d] = l.c[%d][i];\n", n++, k);
    }
    sb_printf(b, "}\n__device__ __forceinline__ void stage_fence(const uint64_t *w)\n{\n  (void)w;\n");
    for (int q = 0; q < n; q++)
        sb_printf(b, "  asm volatile(\"\" :: \"l\"(w[%d]));\n", q);
    sb_printf(b, "}\n#define NPRE %d\n", n);
    return n;
}

/* Marks in col[] the input columns (of a map's row, < al) that code reads. */
static void mark_columns(const rf_code *code, int al, bool *col)
{
    for (int k = 0; code && k < code->n; k++)
        if (code->ins[k].op == RF_EX_COL && code->ins[k].index >= 0 && code->ins[k].index < al &&
            code->ins[k].index < RF_CUDA_MAX_COLS)
            col[code->ins[k].index] = true;
}

static void emit_value_preload(sbuf *b, bool join, int al, int nvals, const rf_code *vals, int nkeys, int naggs,
                              const int *kind, const int *arg_val, int *pre_slot)
{
    bool used[2 * RF_CUDA_MAX_COLS] = {false};
    bool col[RF_CUDA_MAX_COLS] = {false};
    for (int v = 0; v < nkeys && v < nvals; v++)
        used[v] = true;
    for (int j = 0; j < naggs; j++)
        if (kind[j] != RF_REDUCE_COUNT && arg_val[j] >= 0 && arg_val[j] < nvals)
            used[arg_val[j]] = true;
    for (int v = 0; v < nvals && !join; v++)
        if (used[v])
            mark_columns(&vals[v], al, col);
    emit_preload_fns(b, col, pre_slot);
}

/* The columns a selection's filter reads on every row, wherever its plan
 * lets it stop early: the conjuncts of the plan's first group (joined by
 * &), or the first conjunct of the unchanged filter, or the whole filter
 * when it is one conjunct. At most RF_SEL_PRELOAD_MAX of them (else none:
 * the words are held in registers for all ITEMS rows). */
#define RF_SEL_PRELOAD_MAX 4
static int first_group_columns(const rf_code *filter, const rf_cg_plan *plan, int al, bool *col)
{
    memset(col, 0, RF_CUDA_MAX_COLS * sizeof *col);
    if (!filter || filter->n == 0)
        return 0;
    if (plan) {
        const rf_selplan *p = &plan->plan;
        int e = 1;
        while (e < plan->part_start[1] && p->conn[e - 1] == RF_SEL_AND)
            e++;
        for (int x = 0; x < e; x++)
            mark_columns(&plan->split.conj[p->order[x]].code, al, col);
    } else {
        rf_cg_plan split;
        rf_status st;
        rf_status_init(&st);
        /* (More conjuncts than a plan takes come back as 1 with no split:
         * the stage is the && chain as it is; nothing preloaded.) */
        int nc = rf_cg_plan_split(filter, &split, &st);
        if (nc == 1 && split.split.n == 1)
            mark_columns(filter, al, col);
        else if (nc >= 2)
            mark_columns(&split.split.conj[0].code, al, col);
        rf_cg_plan_free(&split);
    }
    int n = 0;
    for (int k = 0; k < RF_CUDA_MAX_COLS; k++)
        n += col[k];
    if (n > RF_SEL_PRELOAD_MAX) {
        memset(col, 0, RF_CUDA_MAX_COLS * sizeof *col);
        n = 0;
    }
    return n;
}

char *rf_codegen_reduce_source(bool join, int al, const rf_code *filter, int nvals, const rf_code *vals, int nkeys,
                               int naggs, const rf_aggfn *fns, const int *arg_val, const struct rf_cg_plan *plan)
{
    if (plan && plan->nparts != 1)
        return NULL; /* one kernel: a reducing gather has no row-id parts */
    rf_reduce_layout lay;
    rf_reduce_layout_of(nkeys, naggs, fns, &lay);
    if (nkeys > nvals || naggs < 1 || naggs > RF_CUDA_MAX_COLS || nvals > 2 * RF_CUDA_MAX_COLS ||
        !lay.shared_slots)
        return NULL;
    for (int j = 0; j < naggs; j++)
        if (lay.kind[j] != RF_REDUCE_COUNT && (arg_val[j] < 0 || arg_val[j] >= nvals))
            return NULL;
    sbuf b = {0};
    emit_prelude(&b, join ? "reducing gather (join)" : "reducing gather (map)");
    int pre_slot[RF_CUDA_MAX_COLS];
    emit_value_preload(&b, join, al, nvals, vals, nkeys, naggs, lay.kind, arg_val, pre_slot);
    /* The stages read the preloaded columns from the row's words (pre), not
     * from memory: a second load of the same word would be issued again
     * after the fences (the compiler does not forward loads across them). */
    emit_row_stages_pre(&b, join, al, filter, nvals, vals, plan, join ? NULL : pre_slot);
    const char *pre_arg = join ? "" : ", pre[u]";
    /* RF_CUDA_REDUCE_MIN_BLOCKS (tuning, 1..8): blocks of 256 per SM that the
     * compiler must fit (__launch_bounds__' second argument: fewer registers
     * a thread, more warps to hide latency; spills past some point). */
    const char *mb = getenv("RF_CUDA_REDUCE_MIN_BLOCKS");
    int min_blocks = mb ? atoi(mb) : 1;
    if (min_blocks < 1 || min_blocks > 8)
        min_blocks = 1;
    sb_printf(&b, "#define MINB %d\n", min_blocks);
    sb_printf(&b, "#define RI 4\n#define NK %d\n#define NV %d\n#define SH %d\n#define W %d\n", nkeys, nvals,
              lay.shared_slots,
              lay.words);
    sb_printf(&b, "%s",
              "// The group keys' hash, as the library's k_hash_groups computes it.\n"
              "__device__ __forceinline__ uint64_t red_hash(const uint64_t *k)\n"
              "{ uint64_t h = 0x9e3779b97f4a7c15ull;\n"
              "  for (int q = 0; q < NK; q++) { h ^= k[q]; h *= 0xff51afd7ed558ccdull; h ^= h >> 32; }\n"
              "  return h; }\n"
              "// An exact 128-bit sum: two 64-bit atomics (the carry goes to the high word).\n"
              "__device__ __forceinline__ void red_add128(unsigned long long *cell, uint64_t lo, uint64_t hi)\n"
              "{ unsigned long long old = atomicAdd(&cell[0], lo); if (old + lo < old) hi += 1;\n"
              "  if (hi) atomicAdd(&cell[1], hi); }\n"
              "// The slot of keys k in the global open-addressing table of cap slots (keys\n"
              "// column-major, state 0 empty, 1 being written, 2 ready): found, or claimed\n"
              "// while fewer than cap/2 are taken; -1 when the table is too full.\n"
              "__device__ long long red_global_slot(uint64_t *keys, unsigned *state, uint64_t cap,\n"
              "                                     unsigned long long *claimed, const uint64_t *k, uint64_t h)\n"
              "{\n"
              "  uint64_t s = h & (cap - 1);\n"
              "  for (uint64_t probes = 0; probes < cap; probes++) {\n"
              "    unsigned st = *(volatile unsigned *)&state[s];\n"
              "    if (st == 0) {\n"
              "      if (*(volatile unsigned long long *)claimed >= cap / 2) return -1;\n"
              "      if (atomicCAS(&state[s], 0u, 1u) == 0u) {\n"
              "        atomicAdd(claimed, 1ull);\n"
              "        for (int q = 0; q < NK; q++) keys[(uint64_t)q * cap + s] = k[q];\n"
              "        __threadfence(); // the keys before the state that publishes them\n"
              "        atomicExch(&state[s], 2u);\n"
              "        return (long long)s;\n"
              "      }\n"
              "      continue; // lost the race for it: look at the slot again\n"
              "    }\n"
              "    while (st == 1) st = *(volatile unsigned *)&state[s];\n"
              "    __threadfence(); // the state before the keys it publishes\n"
              "    bool same = true;\n"
              "    for (int q = 0; q < NK && same; q++) same = ((volatile uint64_t *)keys)[(uint64_t)q * cap + s] == k[q];\n"
              "    if (same) return (long long)s;\n"
              "    s = (s + 1) & (cap - 1);\n"
              "  }\n"
              "  return -1;\n"
              "}\n");
    /* The running accumulators of one thread's current group. */
    sb_printf(&b, "struct RedRun { unsigned long long n;");
    for (int j = 0; j < naggs; j++) {
        if (lay.kind[j] == RF_REDUCE_SUM)
            sb_printf(&b, " uint64_t lo%d, hi%d;", j, j);
        else if (lay.kind[j] != RF_REDUCE_COUNT)
            sb_printf(&b, " uint64_t b%d;", j);
    }
    sb_printf(&b, " };\n__device__ __forceinline__ void red_start(RedRun &r)\n{ r.n = 0;");
    for (int j = 0; j < naggs; j++) {
        if (lay.kind[j] == RF_REDUCE_SUM)
            sb_printf(&b, " r.lo%d = 0; r.hi%d = 0;", j, j);
        else if (lay.kind[j] != RF_REDUCE_COUNT)
            sb_printf(&b, " r.b%d = (uint64_t)%s;", j, lay.kind[j] == RF_REDUCE_MIN ? "INT64_MAX" : "INT64_MIN");
    }
    sb_printf(&b, " }\n// One row's values x into the run.\n"
                  "__device__ __forceinline__ void red_add(RedRun &r, const uint64_t *x)\n{ (void)x; r.n++;\n");
    for (int j = 0; j < naggs; j++) {
        if (lay.kind[j] == RF_REDUCE_SUM)
            sb_printf(&b, "  { uint64_t v = x[%d], lo = r.lo%d + v; r.hi%d += ((int64_t)v < 0 ? ~0ull : 0ull) + "
                          "(lo < r.lo%d ? 1ull : 0ull); r.lo%d = lo; }\n", arg_val[j], j, j, j, j);
        else if (lay.kind[j] != RF_REDUCE_COUNT)
            sb_printf(&b, "  if ((int64_t)x[%d] %s (int64_t)r.b%d) r.b%d = x[%d];\n", arg_val[j],
                      lay.kind[j] == RF_REDUCE_MIN ? "<" : ">", j, j, arg_val[j]);
    }
    sb_printf(&b, "}\n// Group s's cell of aggregate word offset `off` (width w): slot-major in shared\n"
                  "// memory, region-major in the global table.\n"
                  "__device__ __forceinline__ unsigned long long *red_cell(unsigned long long *acc, bool sh, uint64_t s,\n"
                  "                                                        uint64_t cap, int off, int w)\n"
                  "{ return sh ? acc + s * W + off : acc + (uint64_t)off * cap + s * w; }\n"
                  "__device__ __forceinline__ void red_flush(unsigned long long *acc, bool sh, uint64_t s, uint64_t cap,\n"
                  "                                          const RedRun &r)\n"
                  "{\n  atomicAdd(red_cell(acc, sh, s, cap, 0, 1), r.n);\n");
    for (int j = 0; j < naggs; j++) {
        if (lay.kind[j] == RF_REDUCE_SUM)
            sb_printf(&b, "  red_add128(red_cell(acc, sh, s, cap, %d, 2), r.lo%d, r.hi%d);\n", lay.off[j], j, j);
        else if (lay.kind[j] != RF_REDUCE_COUNT)
            sb_printf(&b, "  atomic%s((long long *)red_cell(acc, sh, s, cap, %d, 1), (long long)r.b%d);\n",
                      lay.kind[j] == RF_REDUCE_MIN ? "Min" : "Max", lay.off[j], j);
    }
    sb_printf(&b, "}\n// A shared slot's accumulators as a run (to fold into the global table).\n"
                  "__device__ __forceinline__ void red_load(RedRun &r, const unsigned long long *a)\n{ r.n = a[0];");
    for (int j = 0; j < naggs; j++) {
        if (lay.kind[j] == RF_REDUCE_SUM)
            sb_printf(&b, " r.lo%d = a[%d]; r.hi%d = a[%d];", j, lay.off[j], j, lay.off[j] + 1);
        else if (lay.kind[j] != RF_REDUCE_COUNT)
            sb_printf(&b, " r.b%d = a[%d];", j, lay.off[j]);
    }
    sb_printf(&b, " }\n__device__ __forceinline__ void red_init_shared(unsigned long long *a)\n"
                  "{ RedRun r; red_start(r); a[0] = 0;");
    for (int j = 0; j < naggs; j++) {
        if (lay.kind[j] == RF_REDUCE_SUM)
            sb_printf(&b, " a[%d] = 0; a[%d] = 0;", lay.off[j], lay.off[j] + 1);
        else if (lay.kind[j] != RF_REDUCE_COUNT)
            sb_printf(&b, " a[%d] = r.b%d;", lay.off[j], j);
    }
    const char *row = join ? "uint64_t i = owner(off, nl, o), j = lo[i] + (o - off[i]);" : "uint64_t i = o, j = o;";
    sb_printf(&b,
              " }\n"
              "// Rows (candidate pairs) o = t * stride, t < total, in tiles of one row per\n"
              "// thread: those passing the filter make their values (the first NK are the\n"
              "// group keys) and fold into their group. Each thread keeps a run for its\n"
              "// current group and flushes it on a change into the block's shared table\n"
              "// (the global one when the shared one is too full); at the end each block\n"
              "// folds its table into the global one. A shared slot is claimed and its keys\n"
              "// written in one round and compared only in later rounds, the rounds\n"
              "// separated by barriers: no thread reads keys another may be writing.\n"
              "// sample: only claim the sampled rows' groups (counted in counters[0]).\n"
              "// counters[1] != 0: the global table overflowed; faults are in env.err.\n"
              "// Either way the caller discards the result.\n"
              "extern \"C\" __global__ void __launch_bounds__(256, MINB)\n"
              "rf_reduce(RfCols l, RfCols r, const uint64_t *lo, const uint64_t *off, uint64_t nl, uint64_t total,\n"
              "          uint64_t stride, RfEnv env, uint64_t *gkeys, unsigned *gstate, uint64_t cap,\n"
              "          unsigned long long *counters, unsigned long long *gacc, int sample)\n"
              "{\n"
              "  (void)lo; (void)off; (void)nl;\n"
              "  __shared__ uint64_t skeys[NK > 0 ? NK * SH : 1];\n"
              "  __shared__ unsigned sstate[SH];\n"
              "  __shared__ unsigned long long sacc[SH * W];\n"
              "  __shared__ unsigned sclaimed;\n"
              "  for (int q = threadIdx.x; q < SH; q += blockDim.x) { sstate[q] = 0; red_init_shared(sacc + q * W); }\n"
              "  if (threadIdx.x == 0) { sclaimed = 0; if (NK == 0 && !sample) sstate[0] = 2u; }\n"
              "  __syncthreads();\n"
              "  RedRun run; red_start(run);\n"
              "  long long cur = -1; bool cur_sh = false;\n"
              "  uint64_t curk[NK > 0 ? NK : 1] = {0};\n"
              "  unsigned iter = 0;\n"
              "  // Each thread takes RI rows a step: their values are made first (the loads\n"
              "  // of all RI rows in flight together), then folded one by one.\n"
              "  for (uint64_t base = (uint64_t)blockIdx.x * blockDim.x * RI; base < total;\n"
              "       base += (uint64_t)gridDim.x * blockDim.x * RI) {\n"
              "    // An overflowed table ends the pass early (its result is discarded): looked\n"
              "    // at every 8 steps and agreed by the block (a barrier every thread reaches),\n"
              "    // not before every row's loads, which would wait for it.\n"
              "    if ((++iter & 7u) == 0 &&\n"
              "        __syncthreads_or(threadIdx.x == 0 && *(volatile unsigned long long *)&counters[1] != 0))\n"
              "      break;\n"
              "    uint64_t xs[RI][NV > 0 ? NV : 1];\n"
              "    bool lives[RI];\n"
              "    uint64_t pre[RI][NPRE > 0 ? NPRE : 1];\n"
              "    (void)pre;\n"
              "#if NPRE > 0\n"
              "    // The value columns of all RI rows first (stage_preload says why).\n"
              "    #pragma unroll\n"
              "    for (int u = 0; u < RI; u++) {\n"
              "      uint64_t t = base + (uint64_t)u * blockDim.x + threadIdx.x;\n"
              "      for (int q = 0; q < NPRE; q++) pre[u][q] = 0;\n"
              "      if (t < total) stage_preload(l, t * stride, pre[u]);\n"
              "    }\n"
              "    #pragma unroll\n"
              "    for (int u = 0; u < RI; u++) stage_fence(pre[u]);\n"
              "#endif\n"
              "    #pragma unroll\n"
              "    for (int u = 0; u < RI; u++) {\n"
              "      uint64_t t = base + (uint64_t)u * blockDim.x + threadIdx.x, o = t * stride;\n"
              "      uint64_t *x = xs[u];\n"
              "      for (int q = 0; q < (NV > 0 ? NV : 1); q++) x[q] = 0;\n"
              "      bool live = t < total;\n"
              "      if (live) {\n"
              "        %s\n"
              "        uint64_t f = 0;\n"
              "        live = stage_filter(l, i, r, j, env%s, &f) && f;\n",
              row, pre_arg);
    for (int v = 0; v < nvals; v++)
        sb_printf(&b, "        live = live && stage_proj%d(l, i, r, j, env%s, &x[%d]);\n", v, pre_arg, v);
    sb_printf(&b, "%s",
              "      }\n"
              "      lives[u] = live;\n"
              "    }\n"
              "    #pragma unroll\n"
              "    for (int u = 0; u < RI; u++) {\n"
              "    const uint64_t *x = xs[u];\n"
              "    bool live = lives[u];\n"
              "    if (NK == 0 && !sample) {\n"
              "      // One group, shared slot 0 (claimed at the start): no slot to find, so\n"
              "      // no claim rounds and no barrier per row. (Uniform: every thread takes it.)\n"
              "      if (!live) continue;\n"
              "      if (cur < 0) { cur = 0; cur_sh = true; red_start(run); }\n"
              "      red_add(run, x);\n"
              "      continue;\n"
              "    }\n"
              "    uint64_t h = red_hash(x);\n"
              "    if (sample) {\n"
              "      if (live && red_global_slot(gkeys, gstate, cap, &counters[0], x, h) < 0)\n"
              "        atomicExch(&counters[1], 1ull);\n"
              "      continue; // uniform: every thread of the block takes it\n"
              "    }\n"
              "    // The thread's current group again (one group, or keys that repeat): no lookup.\n"
              "    bool same_group = live && cur >= 0;\n"
              "    for (int q = 0; q < NK && same_group; q++) same_group = curk[q] == x[q];\n"
              "    // Else the shared slot, in rounds (see above).\n"
              "    long long s = same_group ? cur : -1;\n"
              "    bool pending = live && !same_group, mine = false, sh = same_group ? cur_sh : true;\n"
              "    uint64_t at = h & (SH - 1);\n"
              "    int probes = 0;\n"
              "    while (__syncthreads_or(pending)) {\n"
              "      while (pending) {\n"
              "        unsigned st = atomicOr(&sstate[at], 0u);\n"
              "        if (st == 2u) {\n"
              "          bool same = true;\n"
              "          for (int q = 0; q < NK && same; q++) same = skeys[q * SH + at] == x[q];\n"
              "          if (same) { s = (long long)at; pending = false; break; }\n"
              "          at = (at + 1) & (SH - 1);\n"
              "          if (++probes >= SH) { pending = false; sh = false; }\n"
              "          continue;\n"
              "        }\n"
              "        if (st == 1u) break; // claimed this round: its keys are readable next round\n"
              "        if (atomicOr(&sclaimed, 0u) >= SH / 2) { pending = false; sh = false; break; }\n"
              "        if (atomicCAS(&sstate[at], 0u, 1u) == 0u) {\n"
              "          atomicAdd(&sclaimed, 1u);\n"
              "          for (int q = 0; q < NK; q++) skeys[q * SH + at] = x[q];\n"
              "          s = (long long)at; pending = false; mine = true;\n"
              "        }\n"
              "        break;\n"
              "      }\n"
              "      __syncthreads();\n"
              "      if (mine) { atomicExch(&sstate[s], 2u); mine = false; }\n"
              "    }\n"
              "    if (!live) continue;\n"
              "    if (!sh) {\n"
              "      s = red_global_slot(gkeys, gstate, cap, &counters[0], x, h);\n"
              "      if (s < 0) { atomicExch(&counters[1], 1ull); continue; }\n"
              "    }\n"
              "    if (s != cur || sh != cur_sh) {\n"
              "      if (cur >= 0) red_flush(cur_sh ? sacc : gacc, cur_sh, (uint64_t)cur, cap, run);\n"
              "      cur = s; cur_sh = sh; red_start(run);\n"
              "      for (int q = 0; q < NK; q++) curk[q] = x[q];\n"
              "    }\n"
              "    red_add(run, x);\n"
              "    }\n"
              "  }\n"
              "  if (cur >= 0) red_flush(cur_sh ? sacc : gacc, cur_sh, (uint64_t)cur, cap, run);\n"
              "  __syncthreads();\n"
              "  for (int q = threadIdx.x; q < SH; q += blockDim.x) {\n"
              "    if (sstate[q] != 2u) continue;\n"
              "    if (NK == 0 && sacc[q * W] == 0) continue; // slot 0 claimed, no row folded\n"
              "    uint64_t k[NK > 0 ? NK : 1];\n"
              "    for (int c = 0; c < NK; c++) k[c] = skeys[c * SH + q];\n"
              "    // Without keys the one group is global slot 0, taken without a claim: a\n"
              "    // claim could see the slot free and the table full at once (another block\n"
              "    // claiming it in between) and drop this block's rows, and the caller\n"
              "    // does not read the overflow flag when there are no keys.\n"
              "    long long g = 0;\n"
              "    if (NK == 0) atomicExch(&gstate[0], 2u);\n"
              "    else g = red_global_slot(gkeys, gstate, cap, &counters[0], k, red_hash(k));\n"
              "    if (g < 0) { atomicExch(&counters[1], 1ull); continue; }\n"
              "    RedRun v; red_load(v, sacc + q * W);\n"
              "    red_flush(gacc, false, (uint64_t)g, cap, v);\n"
              "  }\n"
              "}\n");
    return b.s;
}

/* ---- A thread chain with its compaction as one kernel ---- */

/* The tile's place, by one warp (warp 0): counts[ITEMS * NWARPS] (the
 * kept rows of each item and warp, in row order) become exclusive offsets
 * within the tile (two per lane, a shuffle scan); the tile publishes its
 * total as an aggregate, then reads its predecessors' status words 32 at a
 * time (one per lane, each spinning until its predecessor has published)
 * and adds aggregates back to the nearest inclusive prefix. A thread doing
 * both alone, one predecessor at a time, kept the block waiting at its
 * barrier for a chain of dependent loads. */
#define LOOK_BACK_SOURCE                                                                            \
    "__device__ __forceinline__ void look_back(unsigned *counts, unsigned long long *status,\n"      \
    "                                          uint64_t tile, unsigned long long *base, unsigned lane)\n" \
    "{\n"                                                                                            \
    "  static_assert(ITEMS * NWARPS == 64, \"two counts a lane\");\n"                             \
    "  const unsigned full = 0xffffffffu;\n"                                                         \
    "  unsigned a = counts[2 * lane], b = counts[2 * lane + 1], incl = a + b;\n"                     \
    "  for (int d = 1; d < 32; d <<= 1) { unsigned t = __shfl_up_sync(full, incl, d); if (lane >= (unsigned)d) incl += t; }\n" \
    "  unsigned excl = incl - a - b;\n"                                                              \
    "  counts[2 * lane] = excl; counts[2 * lane + 1] = excl + a;\n"                                  \
    "  unsigned long long run = __shfl_sync(full, incl, 31), before = 0;\n"                          \
    "  if (tile == 0) {\n"                                                                           \
    "    if (lane == 0) atomicExch(&status[0], ST_PREFIX | run);\n"                                  \
    "  } else {\n"                                                                                   \
    "    if (lane == 0) atomicExch(&status[tile], ST_AGG | run);\n"                                  \
    "    for (long long last = (long long)tile - 1;; last -= 32) {\n"                                 \
    "      long long q = last - (long long)lane;\n"                                                  \
    "      unsigned long long v = ST_PREFIX; /* before tile 0: a prefix of 0 */\n"                    \
    "      if (q >= 0) { v = *(volatile unsigned long long *)&status[q];\n"                          \
    "        while (v == 0) { if (LB_SLEEP) __nanosleep(LB_SLEEP); v = *(volatile unsigned long long *)&status[q]; } }\n" \
    "      unsigned pre = __ballot_sync(full, (v & ST_PREFIX) != 0);\n"                               \
    "      unsigned first = pre ? (unsigned)(__ffs(pre) - 1) : 32u;\n"                                \
    "      unsigned long long mine = lane <= first ? (v & ST_VALUE) : 0;\n"                           \
    "      for (int d = 16; d; d >>= 1) mine += __shfl_down_sync(full, mine, d);\n"                   \
    "      before += __shfl_sync(full, mine, 0);\n"                                                  \
    "      if (pre) break;\n"                                                                        \
    "    }\n"                                                                                        \
    "    if (lane == 0) atomicExch(&status[tile], ST_PREFIX | (before + run));\n"                    \
    "  }\n"                                                                                          \
    "  if (lane == 0) *base = before;\n"                                                             \
    "}\n"

/* The preloaded words of a tile's ITEMS rows (stage_preload), then one
 * fence for all of them (stage_fence): rf_select and rf_select_many. */
#define PRELOAD_TILE_SOURCE                                                      \
    "    uint64_t pre[ITEMS][NPRE];\n"                                          \
    "    #pragma unroll\n"                                                      \
    "    for (int k = 0; k < ITEMS; k++) {\n"                                   \
    "      uint64_t t = base + (uint64_t)k * BLOCK + threadIdx.x;\n"            \
    "      for (int q = 0; q < NPRE; q++) pre[k][q] = 0;\n"                     \
    "      if (t < n) stage_preload(l, t, pre[k]);\n"                           \
    "    }\n"                                                                   \
    "    #pragma unroll\n"                                                      \
    "    for (int k = 0; k < ITEMS; k++) stage_fence(pre[k]);\n"

/* Projections of at most this many columns are made for all ITEMS rows of a
 * tile before any is written (below). */
#define RF_SEL_BATCH_PROJ 4

/* Two measurement knobs of the selections' kernels (docs/weaver.md, "Knobs"),
 * read when a source is made; their defaults make the kernels as measured:
 * RF_CUDA_LOOKBACK_SLEEP=NS (0..10000, default 0): a look-back lane whose
 * predecessor has not published yet sleeps NS nanoseconds between polls
 * (ncu put the L2 at 80% busy with the DRAM at 60% on patterns (a) and (d),
 * the polls a suspect; docs/performance.md, twenty-fourth session);
 * RF_CUDA_SELECT_BATCH=off: no batch of projected values (below; (a) at
 * 10% selectivity ran 15% faster without it on an H200, 3-6% slower at 50
 * and 90%). */
static int lookback_sleep_ns(void)
{
    const char *e = getenv("RF_CUDA_LOOKBACK_SLEEP");
    long v = e ? strtol(e, NULL, 10) : 0;
    return v > 0 && v <= 10000 ? (int)v : 0;
}

static bool select_batch_allowed(void)
{
    const char *e = getenv("RF_CUDA_SELECT_BATCH");
    return !(e && strcmp(e, "off") == 0);
}

/* One select kernel: `name` over rows (candidate pairs) t < n, row o = t
 * (rid_in: o = rid_in[t], the row ids an earlier part kept), kept where
 * `filter` holds; the last part writes the kept rows' projections, the
 * others their row ids (rid_out), both in input order.
 *
 * Memory-level parallelism, measured on the H100 (docs/performance.md,
 * pattern (a) at 10^8 rows, 65% of copy bandwidth before): a row's filter
 * ends in a warp vote, so each item waited for its own load before the
 * next item's was issued; and a projection's store may alias the next
 * row's load (the compiler cannot know out from l), so each kept row
 * waited for its loads in turn. So (pre) the columns the filter reads on
 * every row come first for all ITEMS rows (stage_preload, the reducing
 * gather's scheme), and the projections of narrow outputs are made for all
 * kept rows of the tile into registers before any is written. */
static void emit_select_kernel(sbuf *b, const char *name, const char *filter, bool rid_in, bool last, int nproj,
                               bool pre)
{
    const char *row = rid_in ? "(uint64_t)rid_in[t]" : "t";
    const char *pre_arg = pre ? ", pre[k]" : "";
    sb_printf(b,
              "extern \"C\" __global__ void __launch_bounds__(256)\n"
              "%s(RfCols l, RfCols r, const uint64_t *lo, const uint64_t *off, uint64_t nl, uint64_t n,\n"
              "          RfEnv env, RfWCols out, unsigned long long *status, unsigned long long *next_tile,\n"
              "          uint64_t ntiles, const uint32_t *rid_in, uint32_t *rid_out)\n"
              "{\n"
              "  (void)lo; (void)off; (void)nl; (void)rid_in; (void)rid_out; (void)out;\n"
              "  __shared__ unsigned long long s_tile, s_base;\n"
              "  __shared__ unsigned s_counts[ITEMS][NWARPS];\n"
              "  const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n"
              "  for (;;) {\n"
              "    if (threadIdx.x == 0) s_tile = atomicAdd(next_tile, 1ull);\n"
              "    __syncthreads();\n"
              "    const uint64_t tile = s_tile, base = tile * TILE;\n"
              "    if (tile >= ntiles) return;\n"
              "    unsigned keep = 0;\n",
              name);
    if (pre)
        sb_printf(b, "%s", PRELOAD_TILE_SOURCE);
    sb_printf(b,
              "    #pragma unroll\n"
              "    for (int k = 0; k < ITEMS; k++) {\n"
              "      uint64_t t = base + (uint64_t)k * BLOCK + threadIdx.x, f = 0;\n"
              "      bool pass = false;\n"
              "      if (t < n) { uint64_t o = %s; ROW(o) pass = %s(l, i, r, j, env%s, &f) && f; }\n"
              "      unsigned b = __ballot_sync(0xffffffffu, pass);\n"
              "      if (lane == 0) s_counts[k][warp] = __popc(b);\n"
              "      keep |= (pass ? 1u : 0u) << k;\n"
              "    }\n",
              row, filter, pre_arg);
    bool batch = last && nproj <= RF_SEL_BATCH_PROJ && select_batch_allowed();
    if (batch) {
        /* every kept row's values first (ok: made without a fault), their
         * loads issued before the look-back, whose latency they overlap;
         * the stores after it */
        sb_printf(b, "    uint64_t pv[ITEMS][%d];\n    unsigned ok = 0;\n    #pragma unroll\n"
                     "    for (int k = 0; k < ITEMS; k++) {\n"
                     "      if (!((keep >> k) & 1u)) continue;\n"
                     "      uint64_t t = base + (uint64_t)k * BLOCK + threadIdx.x, o = %s;\n"
                     "      ROW(o)\n      bool good = true;\n",
                  nproj, row);
        for (int p = 0; p < nproj; p++)
            sb_printf(b, "      good = good && stage_proj%d(l, i, r, j, env%s, &pv[k][%d]);\n", p, pre_arg, p);
        sb_printf(b, "%s",
                  "      ok |= (good ? 1u : 0u) << k;\n"
                  "    }\n");
    }
    sb_printf(b, "%s",
              "    __syncthreads();\n"
              "    if (warp == 0) look_back(&s_counts[0][0], status, tile, &s_base, lane);\n"
              "    __syncthreads();\n"
              "    const uint64_t at = s_base;\n");
    if (batch) {
        sb_printf(b, "%s",
                  "    #pragma unroll\n"
                  "    for (int k = 0; k < ITEMS; k++) {\n"
                  "      unsigned b = __ballot_sync(0xffffffffu, (keep >> k) & 1u);\n"
                  "      if (!((ok >> k) & 1u)) continue;\n"
                  "      uint64_t dst = at + s_counts[k][warp] + __popc(b & ((1u << lane) - 1u));\n");
        for (int p = 0; p < nproj; p++)
            sb_printf(b, "      out.c[%d][dst] = pv[k][%d];\n", p, p);
        sb_printf(b, "    }\n");
    } else {
        sb_printf(b, "%s",
                  "    for (int k = 0; k < ITEMS; k++) {\n"
                  "      bool kept = (keep >> k) & 1u;\n"
                  "      unsigned b = __ballot_sync(0xffffffffu, kept);\n"
                  "      if (!kept) continue;\n");
        sb_printf(b,
                  "      uint64_t t = base + (uint64_t)k * BLOCK + threadIdx.x, o = %s;\n"
                  "      uint64_t dst = at + s_counts[k][warp] + __popc(b & ((1u << lane) - 1u));\n",
                  row);
        if (last) {
            sb_printf(b, "      uint64_t v;\n      ROW(o)\n");
            for (int p = 0; p < nproj; p++)
                sb_printf(b, "      if (!stage_proj%d(l, i, r, j, env%s, &v)) continue; out.c[%d][dst] = v;\n", p,
                          pre_arg, p);
        } else {
            sb_printf(b, "      rid_out[dst] = (uint32_t)o;\n");
        }
        sb_printf(b, "    }\n");
    }
    sb_printf(b, "%s",
              "    __syncthreads(); // s_counts and s_tile are the next tile's\n"
              "  }\n"
              "}\n");
}

char *rf_codegen_select_source(bool join, int al, const rf_code *filter, int nproj, const rf_code *proj,
                               const struct rf_cg_plan *plan)
{
    if (nproj < 1 || nproj > RF_CUDA_MAX_COLS || (plan && (plan->nparts < 1 || plan->nparts > RF_CG_MAX_PARTS)))
        return NULL;
    sbuf b = {0};
    emit_prelude(&b, join ? "selection with its compaction (join)" : "selection with its compaction (map)");
    /* Preloads for a map of one kernel (a join's rows are pairs, not
     * contiguous; a later part's rows are row ids). */
    bool col[RF_CUDA_MAX_COLS];
    int pre_slot[RF_CUDA_MAX_COLS];
    bool pre = !join && (!plan || plan->nparts == 1) && first_group_columns(filter, plan, al, col) > 0;
    if (pre)
        emit_preload_fns(&b, col, pre_slot);
    emit_row_stages_pre(&b, join, al, filter, nproj, proj, plan, pre ? pre_slot : NULL);
    sb_printf(&b, "#define ROW(o) %s\n",
              join ? "uint64_t i = owner(off, nl, o), j = lo[i] + (o - off[i]);" : "uint64_t i = o, j = o;");
    sb_printf(&b, "#define LB_SLEEP %d\n", lookback_sleep_ns());
    sb_printf(&b, "%s",
              "#define ITEMS 8\n#define BLOCK 256\n#define NWARPS (BLOCK / 32)\n"
              "#define TILE ((uint64_t)ITEMS * BLOCK)\n"
              "#define ST_AGG (1ull << 62)\n#define ST_PREFIX (2ull << 62)\n#define ST_VALUE ((1ull << 62) - 1)\n"
              LOOK_BACK_SOURCE
              "// One pass: each block takes the next tile of ITEMS x BLOCK rows (a counter,\n"
              "// so that tiles start in order), evaluates the filter of every row, counts the\n"
              "// kept rows per warp and item in row order, finds the rows kept before its\n"
              "// tile by the decoupled look-back over the tiles' status words (aggregate or\n"
              "// inclusive prefix, published as soon as known), then makes and writes the\n"
              "// kept rows' projections at their places: the rows of the kernels run one by\n"
              "// one, in the same order. A row is a MAP's input row, or a JOIN's candidate\n"
              "// pair (lo, off, nl as rf_filter takes them). out holds n rows (the upper\n"
              "// bound); the count is the last tile's prefix. Faults are in env.err (the\n"
              "// caller then discards the result). A plan of several parts (select plan\n"
              "// with |) has one such kernel per part: the first over all rows, each later\n"
              "// one over the row ids (rid_in) the one before kept (rid_out), in order; the\n"
              "// last writes the projections.\n");
    int nparts = plan ? plan->nparts : 1;
    for (int q = 0; q < nparts; q++) {
        char filt[32];
        if (nparts == 1)
            snprintf(filt, sizeof filt, "stage_filter");
        else
            snprintf(filt, sizeof filt, "stage_filter_p%d", q);
        emit_select_kernel(&b, rf_codegen_select_name(nparts, q), filt, q > 0, q + 1 == nparts, nproj, pre);
    }
    return b.s;
}

char *rf_codegen_selsample_source(bool join, int al, const rf_cg_plan *pl)
{
    int n = pl->split.n;
    if (n < 1)
        return NULL;
    sbuf b = {0};
    emit_prelude(&b, join ? "selectivity sample (join)" : "selectivity sample (map)");
    for (int c = 0; c < n; c++) {
        char name[32];
        snprintf(name, sizeof name, "stage_c%d", c);
        emit_stage(&b, name, &pl->split.conj[c].code, al, join);
    }
    sb_printf(&b, "#define ROW(o) %s\n#define NC %d\n",
              join ? "uint64_t i = owner(off, nl, o), j = lo[i] + (o - off[i]);" : "uint64_t i = o, j = o;", n);
    sb_printf(&b, "%s",
              "// Each conjunct on its own over the rows t * stride, t < m: counts[c] gets\n"
              "// the rows where conjunct c holds (a fault counts as not holding: env.err is\n"
              "// scratch here, never the kernel's error).\n"
              "extern \"C\" __global__ void __launch_bounds__(256)\n"
              "rf_selsample(RfCols l, RfCols r, const uint64_t *lo, const uint64_t *off, uint64_t nl, uint64_t m,\n"
              "             uint64_t stride, RfEnv env, unsigned long long *counts)\n"
              "{\n"
              "  (void)lo; (void)off; (void)nl;\n"
              "  __shared__ unsigned s_pass[NC];\n"
              "  for (int c = threadIdx.x; c < NC; c += blockDim.x) s_pass[c] = 0;\n"
              "  __syncthreads();\n"
              "  for (uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; t < m;\n"
              "       t += (uint64_t)gridDim.x * blockDim.x) {\n"
              "    uint64_t o = t * stride, v;\n"
              "    ROW(o)\n");
    for (int c = 0; c < n; c++)
        sb_printf(&b, "    v = 0; if (stage_c%d(l, i, r, j, env, &v) && v) atomicAdd(&s_pass[%d], 1u);\n", c, c);
    sb_printf(&b, "%s",
              "  }\n"
              "  __syncthreads();\n"
              "  for (int c = threadIdx.x; c < NC; c += blockDim.x)\n"
              "    if (s_pass[c]) atomicAdd(&counts[c], (unsigned long long)s_pass[c]);\n"
              "}\n");
    return b.s;
}

/* ---- Several selections of one input in one pass ---- */

char *rf_codegen_select_many_source(int al, int nb, const rf_code *const *filters, const int *nprojs,
                                    const rf_code *const *projs)
{
    if (nb < 2 || nb > RF_SELECT_MANY_MAX)
        return NULL;
    for (int x = 0; x < nb; x++)
        if (nprojs[x] < 1 || nprojs[x] > RF_CUDA_MAX_COLS)
            return NULL;
    sbuf b = {0};
    emit_prelude(&b, "selections of one input with their compactions (map)");
    /* As rf_select (emit_select_kernel says why), the columns every
     * branch's filter reads on every row are preloaded for all ITEMS rows.
     * So are the columns the branches' projections read, where all fit
     * (RF_SEL_PRELOAD_MAX): the kept rows of NB branches together touch
     * most sectors of those columns anyway (at 20% kept rows, 59% of them),
     * and values loaded after the look-back left each tile waiting on a
     * second round trip to memory. Then the stores come straight from the
     * preloaded words (no batch: nothing left to overlap, and holding every
     * branch's values for the tile took 114 registers, two blocks an SM).
     * Pattern (d) at 10^8 rows on the H100: 1.11 -> 0.78 ms at selectivity
     * 0.1, 1.40 -> 1.19 at 0.5, 1.81 -> 1.71 at 0.9. Otherwise the filter
     * columns only, and narrow outputs' values made for the whole tile
     * before any store. */
    bool col[RF_CUDA_MAX_COLS] = {false}, every[RF_CUDA_MAX_COLS];
    int npre = 0, nevery = 0, pre_slot[RF_CUDA_MAX_COLS], nvals = 0;
    for (int x = 0; x < nb; x++) {
        bool one[RF_CUDA_MAX_COLS];
        first_group_columns(filters[x], NULL, al, one);
        for (int k = 0; k < RF_CUDA_MAX_COLS; k++)
            col[k] = col[k] || one[k];
        nvals += nprojs[x];
    }
    memcpy(every, col, sizeof every);
    for (int x = 0; x < nb; x++)
        for (int p = 0; p < nprojs[x]; p++)
            mark_columns(&projs[x][p], al, every);
    for (int k = 0; k < RF_CUDA_MAX_COLS; k++)
        nevery += every[k];
    bool pre_all = nevery <= RF_SEL_PRELOAD_MAX;
    if (pre_all)
        memcpy(col, every, sizeof col);
    for (int k = 0; k < RF_CUDA_MAX_COLS; k++)
        npre += col[k];
    bool pre = npre > 0 && npre <= RF_SEL_PRELOAD_MAX,
         batch = !pre_all && nvals <= RF_SEL_BATCH_PROJ && select_batch_allowed();
    if (pre)
        emit_preload_fns(&b, col, pre_slot);
    const char *pre_arg = pre ? ", pre[k]" : "";
    rf_code none = {0, NULL};
    for (int x = 0; x < nb; x++) {
        char name[48];
        snprintf(name, sizeof name, "stage_b%d_filter", x);
        emit_stage_pre(&b, name, filters[x] ? filters[x] : &none, al, false, pre ? pre_slot : NULL);
        for (int p = 0; p < nprojs[x]; p++) {
            snprintf(name, sizeof name, "stage_b%d_proj%d", x, p);
            emit_stage_pre(&b, name, &projs[x][p], al, false, pre ? pre_slot : NULL);
        }
    }
    sb_printf(&b, "#define NB %d\n", nb);
    sb_printf(&b, "#define LB_SLEEP %d\n", lookback_sleep_ns());
    sb_printf(&b, "%s",
              "#define ITEMS 8\n#define BLOCK 256\n#define NWARPS (BLOCK / 32)\n"
              "#define TILE ((uint64_t)ITEMS * BLOCK)\n"
              "#define ST_AGG (1ull << 62)\n#define ST_PREFIX (2ull << 62)\n#define ST_VALUE ((1ull << 62) - 1)\n"
              LOOK_BACK_SOURCE
              "static_assert(NB <= NWARPS, \"a warp per branch\");\n"
              "// rf_select for NB filters of one input (Kernel Weaver's group of several\n"
              "// outputs): each tile of rows is read once; per branch its kept rows are\n"
              "// counted, placed by the decoupled look-back over the branch's own status\n"
              "// words (status + branch * ntiles) and written in input order, as each MAP\n"
              "// alone writes them. outB holds n rows (the bound); branch B's count is its\n"
              "// last tile's prefix.\n"
              "extern \"C\" __global__ void __launch_bounds__(256)\n"
              "rf_select_many(RfCols l, uint64_t n, RfEnv env");
    for (int x = 0; x < nb; x++)
        sb_printf(&b, ", RfWCols out%d", x);
    sb_printf(&b, "%s",
              ",\n               unsigned long long *status, unsigned long long *next_tile, uint64_t ntiles)\n"
              "{\n"
              "  __shared__ unsigned long long s_tile, s_base[NB];\n"
              "  __shared__ unsigned s_counts[NB][ITEMS][NWARPS];\n"
              "  const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n"
              "  for (;;) {\n"
              "    if (threadIdx.x == 0) s_tile = atomicAdd(next_tile, 1ull);\n"
              "    __syncthreads();\n"
              "    const uint64_t tile = s_tile, base = tile * TILE;\n"
              "    if (tile >= ntiles) return;\n"
              "    unsigned keep[NB];\n"
              "    for (int x = 0; x < NB; x++) keep[x] = 0;\n");
    if (pre)
        sb_printf(&b, "%s", PRELOAD_TILE_SOURCE);
    sb_printf(&b, "%s",
              "    #pragma unroll\n"
              "    for (int k = 0; k < ITEMS; k++) {\n"
              "      uint64_t o = base + (uint64_t)k * BLOCK + threadIdx.x, i = o, j = o, f;\n"
              "      bool pass;\n");
    for (int x = 0; x < nb; x++)
        sb_printf(&b,
                  "      f = 0; pass = o < n && stage_b%d_filter(l, i, l, j, env%s, &f) && f;\n"
                  "      { unsigned m = __ballot_sync(0xffffffffu, pass); if (lane == 0) s_counts[%d][k][warp] = __popc(m); }\n"
                  "      keep[%d] |= (pass ? 1u : 0u) << k;\n",
                  x, pre_arg, x, x);
    sb_printf(&b, "%s",
              "    }\n"
              "    __syncthreads();\n"
              "    // warp x places branch x's kept rows (NB <= NWARPS)\n"
              "    if (warp < NB) look_back(&s_counts[warp][0][0], status + (uint64_t)warp * ntiles, tile, &s_base[warp], lane);\n"
              "    __syncthreads();\n");
    if (batch) {
        /* every branch's kept rows' values first (bit x * ITEMS + k of ok:
         * made without a fault), then the stores. (Made before the
         * look-back, as rf_select's are, pattern (d) ran 4-8% slower at
         * selectivity 0.5 and 0.9 on the H100: NB branches' values held
         * across it.) */
        sb_printf(&b, "    uint64_t pv[ITEMS][%d];\n    unsigned long long ok = 0;\n    #pragma unroll\n"
                      "    for (int k = 0; k < ITEMS; k++) {\n"
                      "      uint64_t o = base + (uint64_t)k * BLOCK + threadIdx.x, i = o, j = o;\n"
                      "      bool good;\n",
                  nvals);
        for (int x = 0, w = 0; x < nb; w += nprojs[x], x++) {
            sb_printf(&b, "      if ((keep[%d] >> k) & 1u) {\n        good = true;\n", x);
            for (int p = 0; p < nprojs[x]; p++)
                sb_printf(&b, "        good = good && stage_b%d_proj%d(l, i, l, j, env%s, &pv[k][%d]);\n", x, p,
                          pre_arg, w + p);
            sb_printf(&b, "        ok |= (good ? 1ull : 0ull) << (%d * ITEMS + k);\n      }\n", x);
        }
        sb_printf(&b, "%s",
                  "    }\n"
                  "    #pragma unroll\n"
                  "    for (int k = 0; k < ITEMS; k++) {\n"
                  "      uint64_t dst;\n"
                  "      unsigned m;\n");
        for (int x = 0, w = 0; x < nb; w += nprojs[x], x++) {
            sb_printf(&b,
                      "      m = __ballot_sync(0xffffffffu, (keep[%d] >> k) & 1u);\n"
                      "      dst = s_base[%d] + s_counts[%d][k][warp] + __popc(m & ((1u << lane) - 1u));\n"
                      "      if ((ok >> (%d * ITEMS + k)) & 1ull) {\n",
                      x, x, x, x);
            for (int p = 0; p < nprojs[x]; p++)
                sb_printf(&b, "        out%d.c[%d][dst] = pv[k][%d];\n", x, p, w + p);
            sb_printf(&b, "      }\n");
        }
    } else {
        sb_printf(&b, "%s",
                  "    for (int k = 0; k < ITEMS; k++) {\n"
                  "      uint64_t o = base + (uint64_t)k * BLOCK + threadIdx.x, i = o, j = o, v, dst;\n"
                  "      bool kept;\n"
                  "      unsigned m;\n");
        for (int x = 0; x < nb; x++) {
            sb_printf(&b,
                      "      kept = (keep[%d] >> k) & 1u;\n"
                      "      m = __ballot_sync(0xffffffffu, kept);\n"
                      "      dst = s_base[%d] + s_counts[%d][k][warp] + __popc(m & ((1u << lane) - 1u));\n"
                      "      if (kept) do {\n",
                      x, x, x);
            for (int p = 0; p < nprojs[x]; p++)
                sb_printf(&b, "        if (!stage_b%d_proj%d(l, i, l, j, env%s, &v)) break; out%d.c[%d][dst] = v;\n",
                          x, p, pre_arg, x, p);
            sb_printf(&b, "      } while (0);\n");
        }
    }
    sb_printf(&b, "%s",
              "    }\n"
              "    __syncthreads(); // s_counts, s_base and s_tile are the next tile's\n"
              "  }\n"
              "}\n");
    return b.s;
}

/* ---- NVRTC, driver API, caches ---- */
typedef int (*nvrtc_create_t)(void **, const char *, const char *, int, const char *const *, const char *const *);
typedef int (*nvrtc_compile_t)(void *, int, const char *const *);
typedef int (*nvrtc_size_t)(void *, size_t *);
typedef int (*nvrtc_get_t)(void *, char *);
typedef int (*nvrtc_destroy_t)(void **);
typedef CUresult (*cu_load_t)(CUmodule *, const void *);
typedef CUresult (*cu_getfn_t)(CUfunction *, CUmodule, const char *);
typedef CUresult (*cu_launch_t)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                CUstream, void **, void **);
typedef CUresult (*cu_unload_t)(CUmodule);
typedef CUresult (*cu_occupancy_t)(int *, CUfunction, int, size_t);

#define CG_MAX_FNS RF_CG_MAX_PARTS
/* A module in the process's cache: being made by one thread (others
 * wanting it wait), made, or failed (each later request fails at once). */
enum { CG_LOADING, CG_READY, CG_FAILED };
typedef struct cg_module {
    uint64_t hash;
    int state;
    CUmodule mod;
    int nfns;
    CUfunction fns[CG_MAX_FNS];
} cg_module;

/* A select plan applied to an output's kernel, and how often. */
typedef struct cg_plan_note {
    char *what, *note;
    size_t calls;
} cg_plan_note;
/* Sources to compile and load ahead, on a thread of their own
 * (rf_codegen_prefetch). */
typedef struct cg_prefetch {
    rf_cuda_ctx *c;
    int n;
    char **srcs;
    char ***names;
    int *nnames;
    rf_cg_key *keys; /* [n] or NULL */
    bool stop; /* set (under the state's lock) when the context goes */
} cg_prefetch;

/* A source's module hash by the key it was made from (rf_codegen_memo). */
typedef struct cg_memo {
    unsigned char *key;
    size_t len;
    uint64_t hash;
} cg_memo;

typedef struct cg_gain {
    uint64_t hash;
    double saved_ns;
} cg_gain;

typedef struct cg_state {
    bool tried, ok;
    bool nvrtc_tried, nvrtc_ok;
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
    cu_occupancy_t occupancy;
    char arch[32];
    /* mods, stats, the NVRTC and driver entry points: under lock (a
     * prefetch thread compiles while the program runs). */
    pthread_mutex_t lock;
    pthread_cond_t changed;
    RF_VEC(cg_module) mods;
    rf_cuda_codegen_stats stats;
    /* The select planner's constants (rf_codegen_selcalib) and the plans
     * applied (for --stats): the launching thread's only, no lock. */
    bool calib_tried;
    rf_selcalib calib;
    RF_VEC(cg_plan_note) plans;
    /* Time a plan's module not yet loaded would have saved so far, per
     * module (rf_codegen_pays). */
    RF_VEC(cg_gain) gains;
    RF_VEC(cg_memo) memo;
    bool prefetching;
    pthread_t prefetcher;
    cg_prefetch *job;
} cg_state;

/* NVRTC itself, loaded on the first compilation only: a process whose
 * kernels are all in the disk cache does not pay for loading it (tens of
 * milliseconds, more than a TPC-H query's kernels take). */
static bool cg_load_nvrtc(cg_state *g)
{
    if (g->nvrtc_tried)
        return g->nvrtc_ok;
    g->nvrtc_tried = true;
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
    SYM(create, "nvrtcCreateProgram");
    SYM(compile, "nvrtcCompileProgram");
    SYM(cubin_size, "nvrtcGetCUBINSize");
    SYM(cubin, "nvrtcGetCUBIN");
    SYM(log_size, "nvrtcGetProgramLogSize");
    SYM(log, "nvrtcGetProgramLog");
    SYM(destroy, "nvrtcDestroyProgram");
#undef SYM
    g->nvrtc_ok = true;
    return true;
}

/* The driver entry points that load and launch cubins, and the target. */
static bool cg_init(rf_cuda_ctx *c, cg_state *g)
{
    g->tried = true;
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
    DRV(occupancy, "cuOccupancyMaxActiveBlocksPerMultiprocessor");
#undef DRV
    int major = 0, minor = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, c->device) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, c->device) != cudaSuccess) {
        (void)cudaGetLastError();
        return false;
    }
    snprintf(g->arch, sizeof g->arch, "sm_%d%d", major, minor);
    return true;
}

/* The cache key of a source: 8 bytes a step (a byte-at-a-time FNV-1a took
 * ~60 us over a 40 KB source, on every generated kernel's first run), each
 * step a bijection of the state for a given word, then an avalanche. */
static uint64_t hash_text(const char *s, size_t len, uint64_t h)
{
    const uint64_t k1 = 0x9E3779B97F4A7C15ull, k2 = 0xC2B2AE3D27D4EB4Full;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        h ^= w * k2;
        h = ((h << 31) | (h >> 33)) * k1;
    }
    uint64_t w = 0;
    memcpy(&w, s + i, len - i);
    h ^= (w ^ (uint64_t)len) * k2;
    h ^= h >> 33;
    h *= k1;
    h ^= h >> 29;
    h *= k2;
    h ^= h >> 32;
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

static cg_state *cg_state_of(rf_cuda_ctx *c)
{
    if (!c->cg) {
        cg_state *g = rf_calloc(1, sizeof(cg_state));
        pthread_mutex_init(&g->lock, NULL);
        pthread_cond_init(&g->changed, NULL);
        c->cg = g;
    }
    return c->cg;
}

/* The source and the target name a cubin (any NVRTC that compiled the
 * source made a valid one; the toolkit version keeps caches apart). */
static uint64_t module_hash(const cg_state *g, const char *src)
{
    char salt[96];
    snprintf(salt, sizeof salt, "%s cuda %d", g->arch, (int)CUDART_VERSION);
    return hash_text(src, strlen(src), hash_text(salt, strlen(salt), 14695981039346656037ull));
}

/* ---- Modules by what their sources are made from (rf_cg_key) ---- */

static void key_bytes(rf_cg_key *k, const void *p, size_t n)
{
    if (k->len + n > k->cap) {
        size_t cap = k->cap ? k->cap : 256;
        while (cap < k->len + n)
            cap *= 2;
        k->bytes = rf_realloc(k->bytes, cap);
        k->cap = cap;
    }
    memcpy(k->bytes + k->len, p, n);
    k->len += n;
}

static void key_int(rf_cg_key *k, int64_t v) { key_bytes(k, &v, sizeof v); }

static void key_code(rf_cg_key *k, const rf_code *c)
{
    key_int(k, c ? c->n : -1);
    for (int i = 0; c && i < c->n; i++) {
        const rf_instr *in = &c->ins[i];
        key_int(k, (int64_t)in->op | (int64_t)in->type << 8 | (int64_t)in->arg_type << 16 |
                       (int64_t)(uint32_t)in->index << 32);
        key_int(k, (int64_t)in->value);
    }
}

/* What of a plan the generators read: its conjuncts, order, connectors
 * (n - 1 of them) and parts. */
static void key_plan(rf_cg_key *k, const rf_cg_plan *pl)
{
    if (!pl) {
        key_int(k, -1);
        return;
    }
    int n = pl->plan.n, parts = pl->nparts < 0 ? 0 : pl->nparts > RF_CG_MAX_PARTS ? RF_CG_MAX_PARTS : pl->nparts;
    key_int(k, n);
    for (int i = 0; i < n; i++)
        key_int(k, (int64_t)pl->plan.order[i] | (int64_t)(i + 1 < n ? pl->plan.conn[i] : 0) << 16);
    key_int(k, pl->nparts);
    for (int q = 0; q <= parts; q++)
        key_int(k, pl->part_start[q]);
    key_int(k, pl->split.n);
    for (int c = 0; c < pl->split.n; c++)
        key_code(k, &pl->split.conj[c].code);
}

static void key_start(rf_cg_key *k, const char *generator)
{
    k->len = 0;
    key_bytes(k, generator, strlen(generator) + 1);
}

/* The part of a select's and a reducing gather's key that says what rows
 * it reads and what values it makes of them. */
static void key_rows(rf_cg_key *k, const char *generator, bool join, int al, const rf_code *filter, int nvals,
                     const rf_code *vals)
{
    key_start(k, generator);
    key_int(k, join);
    key_int(k, al);
    key_code(k, filter);
    key_int(k, nvals);
    for (int v = 0; v < nvals; v++)
        key_code(k, &vals[v]);
}

void rf_cg_key_select(rf_cg_key *k, bool join, int al, const rf_code *filter, int nproj, const rf_code *proj,
                      const struct rf_cg_plan *plan)
{
    key_rows(k, "select", join, al, filter, nproj, proj);
    key_plan(k, plan);
}

void rf_cg_key_select_many(rf_cg_key *k, int al, int nb, const rf_code *const *filters, const int *nprojs,
                           const rf_code *const *projs)
{
    key_start(k, "select many");
    key_int(k, al);
    key_int(k, nb);
    for (int x = 0; x < nb; x++) {
        key_code(k, filters[x]);
        key_int(k, nprojs[x]);
        for (int p = 0; p < nprojs[x]; p++)
            key_code(k, &projs[x][p]);
    }
}

void rf_cg_key_reduce(rf_cg_key *k, bool join, int al, const rf_code *filter, int nvals, const rf_code *vals,
                      int nkeys, int naggs, const rf_aggfn *fns, const int *arg_val, const struct rf_cg_plan *plan)
{
    key_rows(k, "reduce", join, al, filter, nvals, vals);
    key_int(k, nkeys);
    key_int(k, naggs);
    for (int a = 0; a < naggs; a++)
        key_int(k, (int64_t)fns[a] | (int64_t)(uint32_t)arg_val[a] << 16);
    key_plan(k, plan);
}

void rf_cg_key_sample(rf_cg_key *k, bool join, int al, const struct rf_cg_plan *plan)
{
    key_start(k, "sample"); /* the sample reads the conjuncts alone, not the plan's order */
    key_int(k, join);
    key_int(k, al);
    key_int(k, plan->split.n);
    for (int c = 0; c < plan->split.n; c++)
        key_code(k, &plan->split.conj[c].code);
}

void rf_cg_key_free(rf_cg_key *k)
{
    free(k->bytes);
    memset(k, 0, sizeof *k);
}

static cg_memo *memo_find(cg_state *g, const rf_cg_key *k)
{
    for (size_t i = 0; i < g->memo.len; i++)
        if (g->memo.items[i].len == k->len && memcmp(g->memo.items[i].key, k->bytes, k->len) == 0)
            return &g->memo.items[i];
    return NULL;
}

void rf_codegen_memo(rf_cuda_ctx *c, const rf_cg_key *k, const char *src)
{
    if (!k->len || !src)
        return;
    cg_state *g = cg_state_of(c);
    pthread_mutex_lock(&g->lock);
    if (!g->tried)
        g->ok = cg_init(c, g);
    bool ok = g->ok && !memo_find(g, k);
    pthread_mutex_unlock(&g->lock);
    if (!ok)
        return;
    uint64_t h = module_hash(g, src); /* outside the lock: g->arch is set once */
    pthread_mutex_lock(&g->lock);
    if (!memo_find(g, k)) {
        cg_memo m = {rf_malloc(k->len), k->len, h};
        memcpy(m.key, k->bytes, k->len);
        RF_PUSH(g->memo, m);
    }
    pthread_mutex_unlock(&g->lock);
}

bool rf_codegen_module_by_key(rf_cuda_ctx *c, const rf_cg_key *k, int n, const char *const *names, void **fns)
{
    (void)names; /* a key's module was loaded with the same kernels, in the same order */
    cg_state *g = c->cg;
    if (!g || !k->len || n < 1 || n > CG_MAX_FNS)
        return false;
    pthread_mutex_lock(&g->lock);
    const cg_memo *m = g->ok ? memo_find(g, k) : NULL;
    bool ready = false;
    if (m) {
        uint64_t h = m->hash;
        for (;;) {
            size_t at;
            for (at = 0; at < g->mods.len && g->mods.items[at].hash != h; at++)
                ;
            if (at == g->mods.len)
                break;
            if (g->mods.items[at].state == CG_LOADING) {
                pthread_cond_wait(&g->changed, &g->lock); /* the prefetch makes it */
                continue;
            }
            ready = g->mods.items[at].state == CG_READY && g->mods.items[at].nfns == n;
            if (ready) {
                g->stats.mem_hits++;
                for (int i = 0; i < n; i++)
                    fns[i] = g->mods.items[at].fns[i];
            }
            break;
        }
    }
    pthread_mutex_unlock(&g->lock);
    return ready;
}

/* The gains offered under h so far, gain_ns (when positive) added; g->lock
 * held. */
static double gains_add(cg_state *g, uint64_t h, double gain_ns)
{
    cg_gain *gain = NULL;
    for (size_t i = 0; i < g->gains.len && !gain; i++)
        if (g->gains.items[i].hash == h)
            gain = &g->gains.items[i];
    if (!gain) {
        cg_gain fresh = {h, 0.0};
        RF_PUSH(g->gains, fresh);
        gain = &g->gains.items[g->gains.len - 1];
    }
    gain->saved_ns += gain_ns > 0 ? gain_ns : 0;
    return gain->saved_ns;
}

bool rf_codegen_pays(rf_cuda_ctx *c, const char *src, double gain_ns)
{
    cg_state *g = cg_state_of(c);
    pthread_mutex_lock(&g->lock);
    if (!g->tried)
        g->ok = cg_init(c, g);
    bool pays = false;
    if (g->ok) {
        uint64_t h = module_hash(g, src);
        size_t at;
        for (at = 0; at < g->mods.len && g->mods.items[at].hash != h; at++)
            ;
        pays = at < g->mods.len; /* loaded, or being made by another thread */
        if (!pays) {
            double saved = gains_add(g, h, gain_ns);
            double cost = RF_CG_COMPILE_NS;
            char *dir = cache_dir();
            if (dir) {
                char *path = rf_sprintf("%s/%016" PRIx64 "-%s.cubin", dir, h, g->arch);
                struct stat sb;
                if (stat(path, &sb) == 0 && sb.st_size > 0)
                    cost = RF_CG_LOAD_NS;
                free(path);
                free(dir);
            }
            pays = saved >= cost;
        }
    }
    pthread_mutex_unlock(&g->lock);
    return pays;
}

bool rf_codegen_offer(rf_cuda_ctx *c, uint64_t key, double gain_ns, double cost_ns)
{
    cg_state *g = cg_state_of(c);
    pthread_mutex_lock(&g->lock);
    /* salted: a key is not a module's hash */
    bool pays = gains_add(g, key ^ UINT64_C(0x9e3779b97f4a7c15), gain_ns) >= cost_ns;
    pthread_mutex_unlock(&g->lock);
    return pays;
}

bool rf_codegen_module(rf_cuda_ctx *c, const char *src, int n, const char *const *names, void **fns)
{
    if (n < 1 || n > CG_MAX_FNS)
        return false;
    cg_state *g = cg_state_of(c);
    pthread_mutex_lock(&g->lock);
    if (!g->tried)
        g->ok = cg_init(c, g);
    if (!g->ok) {
        pthread_mutex_unlock(&g->lock);
        return false;
    }
    uint64_t h = module_hash(g, src);
    size_t at;
    for (;;) {
        for (at = 0; at < g->mods.len && g->mods.items[at].hash != h; at++)
            ;
        if (at == g->mods.len || g->mods.items[at].state != CG_LOADING)
            break;
        pthread_cond_wait(&g->changed, &g->lock); /* another thread makes it */
    }
    if (at < g->mods.len) {
        bool ready = g->mods.items[at].state == CG_READY;
        if (ready) {
            g->stats.mem_hits++;
            for (int k = 0; k < n; k++)
                fns[k] = g->mods.items[at].fns[k];
        }
        pthread_mutex_unlock(&g->lock);
        return ready;
    }
    cg_module m;
    memset(&m, 0, sizeof m);
    m.hash = h;
    m.state = CG_LOADING;
    m.nfns = n;
    RF_PUSH(g->mods, m);
    pthread_mutex_unlock(&g->lock);

    double t0 = rf_now();
    char *dir = cache_dir(), *path = NULL;
    if (dir) {
        mkdir(dir, 0755);
        path = rf_sprintf("%s/%016" PRIx64 "-%s.cubin", dir, h, g->arch);
    }
    size_t len = 0;
    char *cubin = path ? read_all(path, &len) : NULL;
    bool from_disk = cubin != NULL && len > 0, compiled = false;
    if (!from_disk) {
        free(cubin);
        cubin = NULL;
        pthread_mutex_lock(&g->lock);
        bool have_nvrtc = cg_load_nvrtc(g);
        pthread_mutex_unlock(&g->lock);
        compiled = have_nvrtc && compile_src(g, src, &cubin, &len);
        if (compiled && path)
            write_all(path, cubin, len);
    }
    double t1 = rf_now();
    bool ok = (from_disk || compiled) && g->load(&m.mod, cubin) == CUDA_SUCCESS;
    for (int k = 0; ok && k < n; k++)
        ok = g->getfn(&m.fns[k], m.mod, names[k]) == CUDA_SUCCESS;
    double t2 = rf_now();
    free(cubin);
    free(dir);
    free(path);

    pthread_mutex_lock(&g->lock);
    cg_module *slot = &g->mods.items[at];
    if (compiled) {
        g->stats.compiled++;
        g->stats.compile_seconds += t1 - t0;
    }
    if (ok) {
        g->stats.load_seconds += t2 - t1;
        g->stats.cache_hits += from_disk;
        slot->mod = m.mod;
        memcpy(slot->fns, m.fns, sizeof m.fns);
        slot->state = CG_READY;
        for (int k = 0; k < n; k++)
            fns[k] = m.fns[k];
    } else {
        g->stats.failures++;
        slot->state = CG_FAILED;
        if (m.mod)
            g->unload(m.mod);
    }
    pthread_cond_broadcast(&g->changed);
    pthread_mutex_unlock(&g->lock);
    return ok;
}

static void *prefetch_main(void *arg)
{
    cg_prefetch *job = arg;
    /* The driver's calls act on the thread's current context. */
    if (cudaSetDevice(job->c->device) == cudaSuccess && cudaFree(NULL) == cudaSuccess) {
        for (int i = 0; i < job->n; i++) {
            cg_state *g = job->c->cg;
            pthread_mutex_lock(&g->lock);
            bool stop = job->stop;
            pthread_mutex_unlock(&g->lock);
            if (stop)
                break;
            void *fns[CG_MAX_FNS];
            /* the key first: a run that looks for it while the module is
             * made waits for it (rf_codegen_module_by_key) */
            if (job->keys && job->keys[i].len)
                rf_codegen_memo(job->c, &job->keys[i], job->srcs[i]);
            (void)rf_codegen_module(job->c, job->srcs[i], job->nnames[i], (const char *const *)job->names[i],
                                    fns);
        }
    }
    (void)cudaGetLastError();
    return NULL;
}

static void prefetch_job_free(cg_prefetch *job)
{
    if (!job)
        return;
    for (int i = 0; i < job->n; i++) {
        free(job->srcs[i]);
        for (int k = 0; k < job->nnames[i]; k++)
            free(job->names[i][k]);
        free(job->names[i]);
        if (job->keys)
            rf_cg_key_free(&job->keys[i]);
    }
    free(job->keys);
    free(job->srcs);
    free(job->names);
    free(job->nnames);
    free(job);
}

bool rf_codegen_prefetch(rf_cuda_ctx *c, int n, char **srcs, const char *const *const *names, const int *nnames,
                         rf_cg_key *keys)
{
    cg_state *g = cg_state_of(c);
    if (g->prefetching || n <= 0)
        return false;
    cg_prefetch *job = rf_calloc(1, sizeof *job);
    job->c = c;
    job->n = n;
    if (keys) {
        job->keys = rf_calloc((size_t)n, sizeof *job->keys);
        memcpy(job->keys, keys, (size_t)n * sizeof *keys);
    }
    job->srcs = rf_calloc((size_t)n, sizeof *job->srcs);
    job->names = rf_calloc((size_t)n, sizeof *job->names);
    job->nnames = rf_calloc((size_t)n, sizeof *job->nnames);
    for (int i = 0; i < n; i++) {
        job->srcs[i] = srcs[i];
        job->nnames[i] = nnames[i];
        job->names[i] = rf_calloc((size_t)nnames[i], sizeof *job->names[i]);
        for (int k = 0; k < nnames[i]; k++)
            job->names[i][k] = rf_strdup(names[i][k]);
    }
    if (pthread_create(&g->prefetcher, NULL, prefetch_main, job) != 0) {
        free(job->keys); /* the caller's, with the sources */
        job->keys = NULL;
        for (int i = 0; i < n; i++)
            job->srcs[i] = NULL;
        prefetch_job_free(job);
        return false;
    }
    g->job = job;
    g->prefetching = true;
    return true;
}

bool rf_codegen_kernels(rf_cuda_ctx *c, const char *src, void **filter_fn, void **emit_fn)
{
    const char *names[2] = {"rf_filter", "rf_emit"};
    void *fns[2];
    if (!rf_codegen_module(c, src, 2, names, fns))
        return false;
    *filter_fn = fns[0];
    *emit_fn = fns[1];
    return true;
}

bool rf_codegen_launch(rf_cuda_ctx *c, void *fn, size_t n, void **params, rf_status *st)
{
    return rf_codegen_launch_grid(c, fn, n, 0, params, st);
}

bool rf_codegen_launch_grid(rf_cuda_ctx *c, void *fn, size_t n, size_t max_blocks, void **params, rf_status *st)
{
    cg_state *g = c->cg;
    if (n == 0)
        return true;
    size_t grid = (n + 255) / 256;
    if (grid > 65535u * 16u)
        grid = 65535u * 16u;
    if (max_blocks && grid > max_blocks)
        grid = max_blocks;
    CUresult r = g->launch((CUfunction)fn, (unsigned)grid, 1, 1, 256, 1, 1, 0, (CUstream)c->stream, params, NULL);
    if (r != CUDA_SUCCESS)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "launch of a generated kernel failed (CUresult %d)", (int)r);
    return true;
}

size_t rf_codegen_resident_blocks(rf_cuda_ctx *c, void *fn, size_t fallback)
{
    cg_state *g = c->cg;
    int per_sm = 0, sms = 0;
    if (!g || !g->occupancy || g->occupancy(&per_sm, (CUfunction)fn, 256, 0) != CUDA_SUCCESS || per_sm < 1 ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, c->device) != cudaSuccess || sms < 1) {
        (void)cudaGetLastError();
        return fallback;
    }
    return (size_t)per_sm * (size_t)sms;
}

void rf_codegen_free(rf_cuda_ctx *c)
{
    cg_state *g = c->cg;
    if (!g)
        return;
    if (g->prefetching) {
        /* waits for the kernel being compiled, if any; skips the rest */
        pthread_mutex_lock(&g->lock);
        g->job->stop = 1;
        pthread_mutex_unlock(&g->lock);
        pthread_join(g->prefetcher, NULL);
        prefetch_job_free(g->job);
    }
    for (size_t i = 0; i < g->mods.len; i++)
        if (g->mods.items[i].state == CG_READY)
            g->unload(g->mods.items[i].mod);
    RF_VEC_FREE(g->mods);
    for (size_t i = 0; i < g->plans.len; i++) {
        free(g->plans.items[i].what);
        free(g->plans.items[i].note);
    }
    RF_VEC_FREE(g->plans);
    RF_VEC_FREE(g->gains);
    for (size_t i = 0; i < g->memo.len; i++)
        free(g->memo.items[i].key);
    RF_VEC_FREE(g->memo);
    if (g->lib)
        dlclose(g->lib);
    pthread_mutex_destroy(&g->lock);
    pthread_cond_destroy(&g->changed);
    free(g);
    c->cg = NULL;
}

const rf_selcalib *rf_codegen_selcalib(rf_cuda_ctx *c)
{
    cg_state *g = cg_state_of(c);
    if (g->calib_tried)
        return &g->calib;
    g->calib_tried = true;
    rf_selcalib_defaults(&g->calib);
    char *dir = cache_dir();
    if (!dir)
        return &g->calib;
    char *path = rf_selcalib_path(dir, c->name);
    struct stat sb;
    if (stat(path, &sb) == 0) {
        rf_status st;
        rf_status_init(&st);
        /* A file that does not read is reported, not fatal: the defaults
         * plan as well as any constants, only less precisely. */
        if (!rf_selcalib_read(path, &g->calib, &st)) {
            fprintf(stderr, "redfox: warning: select planning uses its default constants: %s\n", st.message);
            rf_selcalib_defaults(&g->calib);
        }
    }
    free(path);
    free(dir);
    return &g->calib;
}

void rf_codegen_note_plan(rf_cuda_ctx *c, const char *what, const char *note)
{
    cg_state *g = cg_state_of(c);
    for (size_t i = 0; i < g->plans.len; i++)
        if (strcmp(g->plans.items[i].what, what) == 0 && strcmp(g->plans.items[i].note, note) == 0) {
            g->plans.items[i].calls++;
            return;
        }
    cg_plan_note n = {rf_strdup(what), rf_strdup(note), 1};
    RF_PUSH(g->plans, n);
}

void rf_cuda_print_select_plans(const rf_cuda_ctx *c, FILE *f)
{
    const cg_state *g = c->cg;
    for (size_t i = 0; g && i < g->plans.len; i++) {
        fprintf(f, "  gpu: select plan of %s: %s", g->plans.items[i].what, g->plans.items[i].note);
        if (g->plans.items[i].calls > 1)
            fprintf(f, " x %zu launches", g->plans.items[i].calls);
        fputc('\n', f);
    }
}

void rf_cuda_set_codegen(rf_cuda_ctx *c, bool on) { c->codegen = on; }
void rf_cuda_set_codegen_optional(rf_cuda_ctx *c, bool on) { c->codegen_optional = on; }

void rf_cuda_codegen_get_stats(const rf_cuda_ctx *c, rf_cuda_codegen_stats *out)
{
    cg_state *g = c->cg;
    if (g) {
        pthread_mutex_lock(&g->lock);
        *out = g->stats;
        pthread_mutex_unlock(&g->lock);
    } else {
        memset(out, 0, sizeof *out);
    }
}
