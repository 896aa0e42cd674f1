/* The binary form (.rfx) of a Harmony IR program. Little-endian, fixed
 * width, no padding:
 *
 *   "RFOXHIR\0"  u32 version
 *   u32 nstrings, each: u32 len, bytes          (the string dictionary,
 *                                                 ids 0..nstrings-1)
 *   u32 nvars, each:   str name, u32 arity, u8 types[arity], u8 sorted,
 *                      str pred, u64 nfacts, u64 facts[nfacts*arity],
 *                      str input_path, u8 format, u8 is_output,
 *                      str input_where, u32 norder, each: i32 column,
 *                      u8 desc; i64 limit (-1: none), u8 internal
 *   u32 nblocks, each: str label, u32 nkernels, kernel..., u8 term,
 *                      i32 target, i32 target_else, u32 nconds, i32...,
 *                      u32 nkeys, i32 lkeys..., u32 nkeys, i32 rkeys...,
 *                      i32 nvars, i32 natoms (BRANCH_JOIN's key pairs,
 *                      body variables and atoms; 0 for other blocks),
 *                      u32 nfree_entry, i32...
 *   kernel: u8 op, i32 out, i32 in0, i32 in1, i32 nkeys, u8 partition,
 *           u8 gather, code filter, u32 nproj, code...,
 *           u32 naggs, each: u8 aggfn, code agg_arg;
 *           u32 nfree, i32..., str comment,
 *           str origin.where, str origin.what;
 *           FUSED only, then: u32 nmembers, kernel... (not FUSED),
 *           u32 nedges, each: i32 var, i32 from, i32 to, u8 dep;
 *           u32 nin, i32...; u32 nout, i32...
 *           MULTIJOIN only, then: i32 nvars, u32 nin, i32 in...,
 *           u32 n, i32 in_first..., u32 n, i32 in_vars..., i32 count,
 *           u32 n (0 or nvars), i32 alt_order...
 *   code:   u32 n, each: u8 op, u8 type, u8 arg_type, u8 0, i32 index,
 *           u64 value
 *   str:    u32 len (0xffffffff = absent), bytes (no NUL)
 *
 * Input paths: rf_hir_save stores a path inside the .rfx file's folder
 * relative to that folder, any other one absolute; rf_hir_load resolves
 * relative ones against the folder of the .rfx it reads. So a compiled
 * program runs from any working directory, and a folder holding the .rfx
 * with its data can be moved as a whole.
 *
 * String values (facts, constants) are dictionary ids of the writing
 * process; the reader interns the file's dictionary into its own process
 * and renumbers them, so a file works whatever the reader interned before.
 *
 * The reader trusts nothing: every count is checked against the bytes that
 * remain before anything is allocated, every enum against its range, and
 * the result must pass rf_hir_verify. */
#include "hir.h"
#include "rf_outfile.h"
#include "rf_path.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NO_STRING 0xffffffffu

/* ---- writer ---- */

typedef RF_VEC(uint8_t) buf;

static void put_u8(buf *b, uint8_t x) { RF_PUSH(*b, x); }

static void put_u32(buf *b, uint32_t x)
{
    for (int i = 0; i < 4; i++)
        put_u8(b, (uint8_t)(x >> (8 * i)));
}

static void put_u64(buf *b, uint64_t x)
{
    for (int i = 0; i < 8; i++)
        put_u8(b, (uint8_t)(x >> (8 * i)));
}

static void put_i32(buf *b, int x) { put_u32(b, (uint32_t)x); }

static void put_bytes(buf *b, const void *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        put_u8(b, ((const uint8_t *)p)[i]);
}

static void put_str(buf *b, const char *s)
{
    if (!s) {
        put_u32(b, NO_STRING);
        return;
    }
    size_t n = strlen(s);
    put_u32(b, (uint32_t)n);
    put_bytes(b, s, n);
}

static void put_code(buf *b, const rf_code *c)
{
    put_u32(b, (uint32_t)c->n);
    for (int i = 0; i < c->n; i++) {
        const rf_instr *in = &c->ins[i];
        put_u8(b, in->op);
        put_u8(b, in->type);
        put_u8(b, in->arg_type);
        put_u8(b, 0);
        put_i32(b, in->index);
        put_u64(b, in->value);
    }
}

static void put_ints(buf *b, int n, const int *v)
{
    put_u32(b, (uint32_t)n);
    for (int i = 0; i < n; i++)
        put_i32(b, v[i]);
}

static void put_kernel(buf *b, const rf_kernel *kn)
{
    put_u8(b, (uint8_t)kn->op);
    put_i32(b, kn->out);
    put_i32(b, kn->in[0]);
    put_i32(b, kn->in[1]);
    put_i32(b, kn->nkeys);
    put_u8(b, (uint8_t)kn->partition);
    put_u8(b, (uint8_t)kn->gather);
    put_code(b, &kn->filter);
    put_u32(b, (uint32_t)kn->nproj);
    for (int i = 0; i < kn->nproj; i++)
        put_code(b, &kn->proj[i]);
    put_u32(b, (uint32_t)kn->naggs);
    for (int i = 0; i < kn->naggs; i++) {
        put_u8(b, (uint8_t)kn->aggfn[i]);
        put_code(b, &kn->agg_arg[i]);
    }
    put_ints(b, kn->nfree, kn->frees);
    put_str(b, kn->comment);
    put_str(b, kn->origin.where);
    put_str(b, kn->origin.what);
    if (kn->op == RF_K_MULTIJOIN) {
        static const rf_multijoin no_inputs;
        const rf_multijoin *mj = kn->mj ? kn->mj : &no_inputs;
        put_i32(b, mj->nvars);
        put_ints(b, mj->nin, mj->in);
        put_ints(b, mj->in_first ? mj->nin + 1 : 0, mj->in_first);
        put_ints(b, mj->in_first ? mj->in_first[mj->nin] : 0, mj->in_vars);
        put_i32(b, mj->count ? 1 : 0);
        put_ints(b, mj->alt_order ? mj->nvars : 0, mj->alt_order);
        return;
    }
    if (kn->op != RF_K_FUSED)
        return;
    static const rf_fused none;
    const rf_fused *f = kn->fused ? kn->fused : &none;
    put_u32(b, (uint32_t)f->nmembers);
    for (int i = 0; i < f->nmembers; i++)
        put_kernel(b, &f->members[i]);
    put_u32(b, (uint32_t)f->nedges);
    for (int i = 0; i < f->nedges; i++) {
        put_i32(b, f->edges[i].var);
        put_i32(b, f->edges[i].from);
        put_i32(b, f->edges[i].to);
        put_u8(b, (uint8_t)f->edges[i].dep);
    }
    put_ints(b, f->nin, f->in);
    put_ints(b, f->nout, f->out);
}

/* Input paths as stored: relative to base_dir when inside it (see the top
 * of this file); as they are when base_dir is NULL. */
static char *stored_input_path(const char *path, const char *base_dir)
{
    if (!base_dir)
        return rf_strdup(path);
    char *abs = rf_path_absolute(path);
    const char *rel = rf_path_inside(abs, base_dir);
    char *s = rf_strdup(rel ? rel : abs);
    free(abs);
    return s;
}

static uint8_t *serialize(const rf_hprogram *p, const char *base_dir, size_t *len_out)
{
    buf b = {0};
    put_bytes(&b, RF_HIR_MAGIC, sizeof RF_HIR_MAGIC); /* includes the NUL */
    put_u32(&b, RF_HIR_VERSION);

    size_t ns = rf_str_count();
    put_u32(&b, (uint32_t)ns);
    for (size_t i = 0; i < ns; i++) {
        size_t n = rf_str_len(i);
        put_u32(&b, (uint32_t)n);
        put_bytes(&b, rf_str_get(i), n);
    }

    put_u32(&b, (uint32_t)p->nvars);
    for (int i = 0; i < p->nvars; i++) {
        const rf_hvar *v = &p->vars[i];
        put_str(&b, v->name);
        put_u32(&b, (uint32_t)v->arity);
        for (int j = 0; j < v->arity; j++)
            put_u8(&b, (uint8_t)v->types[j]);
        put_u8(&b, v->sorted);
        put_str(&b, v->pred);
        put_u64(&b, v->nfacts);
        size_t nw = v->arity > 0 ? v->nfacts * (size_t)v->arity : 0;
        for (size_t j = 0; j < nw; j++)
            put_u64(&b, v->facts[j]);
        char *input = v->input_path ? stored_input_path(v->input_path, base_dir) : NULL;
        put_str(&b, input);
        free(input);
        put_u8(&b, (uint8_t)v->input_format);
        put_u8(&b, v->is_output);
        put_str(&b, v->input_where);
        put_u32(&b, (uint32_t)v->norder);
        for (int j = 0; j < v->norder; j++) {
            put_i32(&b, v->order_cols[j]);
            put_u8(&b, v->order_desc[j]);
        }
        put_u64(&b, (uint64_t)v->limit);
        put_u8(&b, v->internal);
    }

    put_u32(&b, (uint32_t)p->nblocks);
    for (int bi = 0; bi < p->nblocks; bi++) {
        const rf_hblock *hb = &p->blocks[bi];
        put_str(&b, hb->label);
        put_u32(&b, (uint32_t)hb->nkernels);
        for (int k = 0; k < hb->nkernels; k++) {
            put_kernel(&b, &hb->kernels[k]);
        }
        put_u8(&b, (uint8_t)hb->term);
        put_i32(&b, hb->target);
        put_i32(&b, hb->target_else);
        put_ints(&b, hb->nconds, hb->conds);
        put_ints(&b, hb->lkeys ? hb->nkeys : 0, hb->lkeys);
        put_ints(&b, hb->rkeys ? hb->nkeys : 0, hb->rkeys);
        put_i32(&b, hb->nvars);
        put_i32(&b, hb->natoms);
        put_ints(&b, hb->nfree_entry, hb->free_entry);
    }
    *len_out = b.len;
    return b.items;
}

uint8_t *rf_hir_serialize(const rf_hprogram *p, size_t *len_out) { return serialize(p, NULL, len_out); }

/* ---- reader ---- */

typedef struct rd {
    const uint8_t *p;
    size_t len, pos;
    rf_status *st;
    bool failed;
} rd;

static bool truncated(rd *r, const char *what)
{
    if (!r->failed)
        rf_fail(r->st, RF_EXIT_RUNTIME_ERROR,
                "truncated .rfx file: %zu bytes, more needed at offset %zu (%s)", r->len, r->pos, what);
    r->failed = true;
    return false;
}

static bool malformed(rd *r, const char *fmt, ...) RF_PRINTF(2, 3);
static bool malformed(rd *r, const char *fmt, ...)
{
    if (!r->failed) {
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        rf_fail(r->st, RF_EXIT_RUNTIME_ERROR, "malformed .rfx file: %s (offset %zu)", msg, r->pos);
    }
    r->failed = true;
    return false;
}

static bool need(rd *r, size_t n, const char *what)
{
    if (r->failed)
        return false;
    if (r->len - r->pos < n)
        return truncated(r, what);
    return true;
}

static uint8_t get_u8(rd *r, const char *what)
{
    if (!need(r, 1, what))
        return 0;
    return r->p[r->pos++];
}

static uint64_t get_le(rd *r, int n, const char *what)
{
    if (!need(r, (size_t)n, what))
        return 0;
    uint64_t x = 0;
    for (int i = 0; i < n; i++)
        x |= (uint64_t)r->p[r->pos + (size_t)i] << (8 * i);
    r->pos += (size_t)n;
    return x;
}

static uint32_t get_u32(rd *r, const char *what) { return (uint32_t)get_le(r, 4, what); }
static uint64_t get_u64(rd *r, const char *what) { return get_le(r, 8, what); }
static int get_i32(rd *r, const char *what) { return (int)(int32_t)get_u32(r, what); }

/* A count of elements of at least `min_size` bytes each: rejected before
 * any allocation when the rest of the file cannot hold them. */
static int get_count(rd *r, size_t min_size, const char *what)
{
    uint32_t n = get_u32(r, what);
    if (r->failed)
        return 0;
    if (n > INT_MAX / 2)
        return malformed(r, "%s count %u is too large", what, n), 0;
    if ((uint64_t)n * min_size > r->len - r->pos)
        return truncated(r, what), 0;
    return (int)n;
}

static bool get_bool(rd *r, const char *what)
{
    uint8_t x = get_u8(r, what);
    if (x > 1)
        malformed(r, "%s is %u, not 0 or 1", what, x);
    return x == 1;
}

static int get_enum(rd *r, int max, const char *what)
{
    uint8_t x = get_u8(r, what);
    if (x > max)
        malformed(r, "%s %u out of range", what, x);
    return x;
}

/* A NUL-terminated copy, or NULL for an absent string. */
static char *get_str(rd *r, const char *what)
{
    uint32_t n = get_u32(r, what);
    if (r->failed || n == NO_STRING)
        return NULL;
    if (!need(r, n, what))
        return NULL;
    if (memchr(r->p + r->pos, 0, n))
        return malformed(r, "%s contains a NUL byte", what), NULL;
    char *s = rf_strndup((const char *)r->p + r->pos, n);
    r->pos += n;
    return s;
}

static void get_code(rd *r, rf_code *c, const char *what)
{
    int n = get_count(r, 16, what);
    if (r->failed || n == 0)
        return;
    c->ins = rf_calloc((size_t)n, sizeof *c->ins);
    c->n = n;
    for (int i = 0; i < n && !r->failed; i++) {
        rf_instr *in = &c->ins[i];
        in->op = (uint8_t)get_enum(r, RF_EX_COUNT_ - 1, "instruction op");
        in->type = (uint8_t)get_enum(r, RF_TYPE_COUNT_ - 1, "instruction type");
        in->arg_type = (uint8_t)get_enum(r, RF_TYPE_COUNT_ - 1, "instruction operand type");
        if (get_u8(r, "instruction padding") != 0)
            malformed(r, "instruction padding is not zero");
        in->index = get_i32(r, "instruction index");
        in->value = get_u64(r, "instruction value");
        if (!r->failed && (in->type == RF_TYPE_INVALID || in->arg_type == RF_TYPE_INVALID))
            malformed(r, "instruction without a type");
    }
}

static int *get_ints(rd *r, int *n_out, const char *what)
{
    int n = get_count(r, 4, what);
    *n_out = 0;
    if (r->failed || n == 0)
        return NULL;
    int *v = rf_calloc((size_t)n, sizeof *v);
    for (int i = 0; i < n; i++)
        v[i] = get_i32(r, what);
    *n_out = n;
    return v;
}

static void get_kernel(rd *r, rf_kernel *k, bool member)
{
    k->op = (rf_kop)get_enum(r, RF_K_COUNT_ - 1, "kernel op");
    k->out = get_i32(r, "kernel output");
    k->in[0] = get_i32(r, "kernel input");
    k->in[1] = get_i32(r, "kernel input");
    k->nkeys = get_i32(r, "kernel key count");
    k->partition = (rf_partition)get_enum(r, RF_PART_GROUP, "partition stage");
    k->gather = (rf_gather)get_enum(r, RF_GATHER_SET, "gather stage");
    get_code(r, &k->filter, "filter code");
    int np = get_count(r, 4, "projection");
    if (!r->failed && np > 0) {
        k->proj = rf_calloc((size_t)np, sizeof *k->proj);
        k->nproj = np;
        for (int i = 0; i < np && !r->failed; i++)
            get_code(r, &k->proj[i], "projection code");
    }
    int na = get_count(r, 5, "aggregate");
    if (!r->failed && na > 0) {
        k->aggfn = rf_calloc((size_t)na, sizeof *k->aggfn);
        k->agg_arg = rf_calloc((size_t)na, sizeof *k->agg_arg);
        k->naggs = na;
        for (int i = 0; i < na && !r->failed; i++) {
            k->aggfn[i] = (rf_aggfn)get_enum(r, RF_AGG_LAST, "aggregate function");
            get_code(r, &k->agg_arg[i], "aggregate code");
        }
    }
    k->frees = get_ints(r, &k->nfree, "kernel free list");
    k->comment = get_str(r, "kernel comment");
    k->origin.where = get_str(r, "kernel origin");
    k->origin.what = get_str(r, "kernel origin");
    if (!r->failed && k->op == RF_K_MULTIJOIN) {
        rf_multijoin *mj = k->mj = rf_calloc(1, sizeof *mj);
        mj->nvars = get_i32(r, "multijoin variable count");
        mj->in = get_ints(r, &mj->nin, "multijoin inputs");
        int nfirst, nvars;
        mj->in_first = get_ints(r, &nfirst, "multijoin input columns");
        mj->in_vars = get_ints(r, &nvars, "multijoin column variables");
        int32_t count = get_i32(r, "multijoin count flag");
        int nalt;
        mj->alt_order = get_ints(r, &nalt, "multijoin second variable order");
        if (r->failed)
            return;
        if (mj->alt_order && nalt != mj->nvars) {
            malformed(r, "a multijoin's second variable order has %d entries for %d variables", nalt, mj->nvars);
            return;
        }
        if (count != 0 && count != 1) {
            malformed(r, "a multijoin's count flag is neither 0 nor 1");
            return;
        }
        mj->count = count == 1;
        /* The verifier indexes in_vars through in_first: both must fit. */
        bool ok = mj->nin >= 1 && nfirst == mj->nin + 1 && mj->in_first[0] == 0 &&
                  mj->in_first[mj->nin] == nvars;
        for (int i = 0; ok && i < mj->nin; i++)
            ok = mj->in_first[i] <= mj->in_first[i + 1];
        if (!ok)
            malformed(r, "a multijoin's input column lists are inconsistent");
        return;
    }
    if (r->failed || k->op != RF_K_FUSED)
        return;
    if (member) {
        malformed(r, "a fused kernel inside a fused kernel");
        return;
    }
    rf_fused *f = k->fused = rf_calloc(1, sizeof *f);
    int nm = get_count(r, 47, "fused member");
    if (!r->failed && nm > 0) {
        f->members = rf_calloc((size_t)nm, sizeof *f->members);
        f->nmembers = nm;
    }
    for (int i = 0; i < nm && !r->failed; i++)
        get_kernel(r, &f->members[i], true);
    int ne = get_count(r, 13, "fused edge");
    if (!r->failed && ne > 0) {
        f->edges = rf_calloc((size_t)ne, sizeof *f->edges);
        f->nedges = ne;
    }
    for (int i = 0; i < ne && !r->failed; i++) {
        f->edges[i].var = get_i32(r, "edge variable");
        f->edges[i].from = get_i32(r, "edge member");
        f->edges[i].to = get_i32(r, "edge member");
        f->edges[i].dep = (rf_dep)get_enum(r, RF_DEP_COUNT_ - 1, "edge dependence");
    }
    f->in = get_ints(r, &f->nin, "fused inputs");
    f->out = get_ints(r, &f->nout, "fused outputs");
}

static bool remap_code(rd *r, rf_code *c, const rf_word *map, size_t nmap);

/* String constants of a kernel's code (and its members'). */
static void remap_kernel(rd *r, rf_kernel *kn, const rf_word *map, size_t nmap)
{
    remap_code(r, &kn->filter, map, nmap);
    for (int i = 0; i < kn->nproj && !r->failed; i++)
        remap_code(r, &kn->proj[i], map, nmap);
    for (int i = 0; i < kn->naggs && !r->failed; i++)
        remap_code(r, &kn->agg_arg[i], map, nmap);
    for (int i = 0; kn->fused && i < kn->fused->nmembers && !r->failed; i++)
        remap_kernel(r, &kn->fused->members[i], map, nmap);
}

/* Renumbers a string id from the file's dictionary to this process's. */
static bool remap(rd *r, rf_word *w, const rf_word *map, size_t nmap)
{
    if (*w >= nmap)
        return malformed(r, "string id %llu out of range (%zu strings)",
                         (unsigned long long)*w, nmap);
    *w = map[*w];
    return true;
}

static bool remap_code(rd *r, rf_code *c, const rf_word *map, size_t nmap)
{
    for (int i = 0; i < c->n; i++)
        if (c->ins[i].op == RF_EX_CONST && c->ins[i].type == RF_TYPE_STRING &&
            !remap(r, &c->ins[i].value, map, nmap))
            return false;
    return true;
}

rf_hprogram *rf_hir_deserialize(const uint8_t *data, size_t len, rf_status *st)
{
    rd r = {data, data ? len : 0, 0, st, false};
    if (r.len == 0) {
        rf_fail(st, RF_EXIT_RUNTIME_ERROR, "empty file, not a compiled Red Fox program");
        return NULL;
    }
    size_t head = r.len < sizeof RF_HIR_MAGIC ? r.len : sizeof RF_HIR_MAGIC;
    if (memcmp(data, RF_HIR_MAGIC, head) != 0) {
        rf_fail(st, RF_EXIT_RUNTIME_ERROR, "not a compiled Red Fox program (its first bytes are not \"%s\")",
                RF_HIR_MAGIC);
        return NULL;
    }
    if (r.len < sizeof RF_HIR_MAGIC + 4) {
        truncated(&r, "header");
        return NULL;
    }
    r.pos = sizeof RF_HIR_MAGIC;
    uint32_t version = get_u32(&r, "version");
    if (version != RF_HIR_VERSION) {
        rf_fail(st, RF_EXIT_RUNTIME_ERROR,
                "compiled by another version of redfox (format %u, this one reads %d): compile it again",
                version, RF_HIR_VERSION);
        return NULL;
    }

    /* The dictionary stays in the file's bytes until everything else has
     * been read, so a rejected file interns nothing. */
    int nstr = get_count(&r, 4, "string dictionary");
    size_t *str_pos = rf_calloc((size_t)nstr + 1, sizeof *str_pos);
    uint32_t *str_len = rf_calloc((size_t)nstr + 1, sizeof *str_len);
    for (int i = 0; i < nstr && !r.failed; i++) {
        str_len[i] = get_u32(&r, "string length");
        if (need(&r, str_len[i], "string")) {
            str_pos[i] = r.pos;
            r.pos += str_len[i];
        }
    }

    rf_hprogram *p = rf_calloc(1, sizeof *p);
    int nv = get_count(&r, 44, "variable");
    if (!r.failed && nv > 0) {
        p->vars = rf_calloc((size_t)nv, sizeof *p->vars);
        p->nvars = nv;
    }
    for (int i = 0; i < nv && !r.failed; i++) {
        rf_hvar *v = &p->vars[i];
        v->name = get_str(&r, "variable name");
        if (!r.failed && !v->name)
            malformed(&r, "variable %d has no name", i);
        int arity = get_count(&r, 1, "arity");
        if (!r.failed) {
            v->types = rf_calloc((size_t)arity + 1, sizeof *v->types);
            v->arity = arity;
        }
        for (int j = 0; j < arity && !r.failed; j++) {
            v->types[j] = (rf_type)get_enum(&r, RF_TYPE_COUNT_ - 1, "column type");
            if (!r.failed && v->types[j] == RF_TYPE_INVALID)
                malformed(&r, "variable %d column %d has no type", i, j);
        }
        v->sorted = get_bool(&r, "sorted flag");
        v->pred = get_str(&r, "predicate name");
        uint64_t nf = get_u64(&r, "fact count");
        if (!r.failed && arity > 0 && nf > (r.len - r.pos) / 8 / (uint64_t)arity)
            truncated(&r, "facts");
        if (!r.failed && arity == 0 && nf > 1)
            malformed(&r, "variable %d: %llu facts of arity 0", i, (unsigned long long)nf);
        if (!r.failed) {
            v->nfacts = (size_t)nf;
            if (arity > 0 && nf > 0) {
                size_t nw = (size_t)nf * (size_t)arity;
                v->facts = rf_calloc(nw, sizeof *v->facts);
                for (size_t j = 0; j < nw; j++)
                    v->facts[j] = get_u64(&r, "fact");
            }
        }
        v->input_path = get_str(&r, "input path");
        v->input_format = (rf_file_format)get_enum(&r, RF_FORMAT_TBL, "input format");
        v->is_output = get_bool(&r, "output flag");
        v->input_where = get_str(&r, "input origin");
        int no = get_count(&r, 5, "order column");
        if (!r.failed && no > 0) {
            v->order_cols = rf_calloc((size_t)no, sizeof *v->order_cols);
            v->order_desc = rf_calloc((size_t)no, sizeof *v->order_desc);
            v->norder = no;
            for (int j = 0; j < no && !r.failed; j++) {
                v->order_cols[j] = get_i32(&r, "order column");
                v->order_desc[j] = get_bool(&r, "order direction");
            }
        }
        v->limit = (int64_t)get_u64(&r, "output limit");
        v->internal = get_bool(&r, "internal flag");
    }

    int nb = get_count(&r, 25, "block");
    if (!r.failed && nb > 0) {
        p->blocks = rf_calloc((size_t)nb, sizeof *p->blocks);
        p->nblocks = nb;
    }
    for (int b = 0; b < nb && !r.failed; b++) {
        rf_hblock *hb = &p->blocks[b];
        hb->label = get_str(&r, "block label");
        int nk = get_count(&r, 47, "kernel");
        if (!r.failed && nk > 0) {
            hb->kernels = rf_calloc((size_t)nk, sizeof *hb->kernels);
            hb->nkernels = nk;
        }
        for (int k = 0; k < nk && !r.failed; k++)
            get_kernel(&r, &hb->kernels[k], false);
        hb->term = (rf_term)get_enum(&r, RF_TERM_BRANCH_JOIN, "terminator");
        hb->target = get_i32(&r, "jump target");
        hb->target_else = get_i32(&r, "jump target");
        hb->conds = get_ints(&r, &hb->nconds, "branch conditions");
        int nr = 0;
        hb->lkeys = get_ints(&r, &hb->nkeys, "join choice keys");
        hb->rkeys = get_ints(&r, &nr, "join choice keys");
        if (!r.failed && nr != hb->nkeys)
            malformed(&r, "a join choice's key lists differ in length (%d, %d)", hb->nkeys, nr);
        hb->nvars = get_i32(&r, "join choice variables");
        hb->natoms = get_i32(&r, "join choice atoms");
        hb->free_entry = get_ints(&r, &hb->nfree_entry, "block free list");
    }
    if (!r.failed && r.pos != r.len)
        malformed(&r, "%zu bytes of trailing garbage", r.len - r.pos);

    /* Strings: intern the file's dictionary, renumber string values. */
    rf_word *map = NULL;
    if (!r.failed) {
        map = rf_calloc((size_t)nstr + 1, sizeof *map);
        for (int i = 0; i < nstr; i++)
            map[i] = rf_str_intern((const char *)data + str_pos[i], str_len[i]);
        for (int i = 0; i < p->nvars && !r.failed; i++) {
            rf_hvar *v = &p->vars[i];
            for (int j = 0; j < v->arity && !r.failed; j++)
                if (v->types[j] == RF_TYPE_STRING)
                    for (size_t f = 0; f < v->nfacts && !r.failed; f++)
                        remap(&r, &v->facts[f * (size_t)v->arity + (size_t)j], map, (size_t)nstr);
        }
        for (int b = 0; b < p->nblocks && !r.failed; b++)
            for (int k = 0; k < p->blocks[b].nkernels && !r.failed; k++)
                remap_kernel(&r, &p->blocks[b].kernels[k], map, (size_t)nstr);
    }
    free(map);
    free(str_pos);
    free(str_len);

    if (!r.failed) {
        rf_status vs;
        rf_status_init(&vs);
        if (!rf_hir_verify(p, &vs)) {
            rf_fail(st, RF_EXIT_RUNTIME_ERROR, "malformed .rfx file: %s", vs.message);
            r.failed = true;
        }
    }
    if (r.failed) {
        rf_hir_free(p);
        return NULL;
    }
    return p;
}

/* ---- files ---- */

bool rf_hir_save(const rf_hprogram *p, const char *path, rf_status *st)
{
    char *abs = rf_path_absolute(path);
    char *dir = rf_path_dirname(abs);
    size_t len;
    uint8_t *data = serialize(p, dir, &len);
    bool ok = rf_write_file_whole(path, data, len, st);
    free(data);
    free(dir);
    free(abs);
    return ok;
}

rf_hprogram *rf_hir_load(const char *path, rf_status *st)
{
    size_t len;
    char *data = rf_read_file(path, &len, st);
    if (!data)
        return NULL;
    rf_status local;
    rf_status_init(&local);
    rf_hprogram *p = rf_hir_deserialize((const uint8_t *)data, len, &local);
    free(data);
    if (!p) {
        rf_fail(st, local.code, "%s: %s", path, local.message);
        return NULL;
    }
    /* Relative input paths are relative to the .rfx file's folder. */
    char *abs = rf_path_absolute(path);
    char *dir = rf_path_dirname(abs);
    for (int i = 0; i < p->nvars; i++) {
        rf_hvar *v = &p->vars[i];
        if (v->input_path && v->input_path[0] != '/') {
            char *resolved = rf_sprintf("%s/%s", dir, v->input_path);
            free(v->input_path);
            v->input_path = resolved;
        }
    }
    free(dir);
    free(abs);
    return p;
}
