// The GPU library's own kernels (no CUB here: that lives in cub_shim.cu).
// Grid-stride loops over 64-bit row indices; every launcher returns the
// launch error so the C side can report it. The compute-code interpreter
// reproduces rf_scalar_binary / rf_scalar_unary (common/rf_expr.c) bit for
// bit: this file is compiled with --fmad=false so a*b+c never fuses.
#include "cuda_internal.h"

#include <stdint.h>

#include "launch.cuh"

namespace {

using rf_launch::grid_for;
using rf_launch::reduce_grid_for;
using rf_launch::kBlock;


// ---- Row comparisons (lexicographic, unsigned words) ----
__device__ __forceinline__ int cmp_rows(const rf_cols &a, uint64_t i, const rf_cols &b, uint64_t j,
                                        int k)
{
    for (int c = 0; c < k; c++) {
        uint64_t x = a.c[c][i], y = b.c[c][j];
        if (x != y)
            return x < y ? -1 : 1;
    }
    return 0;
}

// First row of r not less than row i of l (on k columns), within [lo, hi).
__device__ __forceinline__ uint64_t lower_bound(const rf_cols &r, uint64_t lo, uint64_t hi,
                                                const rf_cols &l, uint64_t i, int k)
{
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (cmp_rows(r, mid, l, i, k) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

__device__ __forceinline__ uint64_t upper_bound(const rf_cols &r, uint64_t lo, uint64_t hi,
                                                const rf_cols &l, uint64_t i, int k)
{
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (cmp_rows(r, mid, l, i, k) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

// Last index o' in off[0..n] with off[o'] <= o: the left row of candidate o.
__device__ __forceinline__ uint64_t owner(const uint64_t *off, uint64_t n, uint64_t o)
{
    uint64_t lo = 0, hi = n; // answer in [0, n)
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (off[mid] <= o)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

// ---- Compute-code interpreter ----
struct RowView {
    const rf_cols *a;
    uint64_t ia;
    int na;           // columns < na come from a, the rest from b
    const rf_cols *b;
    uint64_t ib;
};

__device__ __forceinline__ uint64_t col_value(const RowView &rv, int c)
{
    return c < rv.na ? rv.a->c[c][rv.ia] : rv.b->c[c - rv.na][rv.ib];
}

typedef rf_derr RfErr;
#include "rf_scalar.cuh"
#include "../../common/rf_agg_ops.h"

// Runs instructions [begin, end) over one row; false after a fault.
__device__ bool eval(const rf_dprog &prog, int begin, int end, const RowView &rv, uint64_t *out)
{
    const RfEnv p{prog.rank, prog.nrank, prog.err, prog.tab};
    uint64_t stack[RF_CUDA_MAX_STACK];
    int sp = 0;
    bool jumped = false; // arrived at an else branch by the IF's jump
    for (int pc = begin; pc < end; pc++) {
        const rf_dins in = prog.ins[pc];
        if (in.sc && !jumped) {
            uint64_t top = stack[sp - 1];
            if (in.sc == 1 && !top) {
                stack[sp - 1] = 0;
                pc = in.skip;
                continue;
            }
            if (in.sc == 2 && top) {
                stack[sp - 1] = 1;
                pc = in.skip;
                continue;
            }
            if (in.sc == 3) { // then branch: pop the condition
                sp--;
                if (!top) {
                    pc = in.skip - 1;
                    jumped = true;
                    continue;
                }
            }
            if (in.sc == 4) { // else branch after the then branch: done
                pc = in.skip;
                continue;
            }
        }
        jumped = false;
        switch (in.op) {
        case RF_EX_CONST:
            stack[sp++] = in.value;
            break;
        case RF_EX_COL:
            stack[sp++] = col_value(rv, in.index);
            break;
        case RF_EX_ROWID: // the row's position in input 0 (a) or 1 (b)
            stack[sp++] = in.index ? rv.ib : rv.ia;
            break;
        case RF_EX_IF: // the branch taken left its value on the stack
            break;
        case RF_DOP_LOOKUP:
            if (!rf_lookup(p, (uint64_t)in.index, stack[sp - 1], &stack[sp - 1]))
                return false;
            break;
        case RF_EX_NEG:
        case RF_EX_NOT:
        case RF_EX_CAST:
        case RF_EX_YEAR:
        case RF_EX_MONTH:
        case RF_EX_DAY:
        case RF_EX_STRLEN:
            if (!rf_sops_unary(p, in.op, in.arg_type, in.type, stack[sp - 1], &stack[sp - 1]))
                return false;
            break;
        case RF_EX_SUBSTR: // string functions are tabulated or run on the host
            return fail(p.err, RF_SERR_HOST_ONLY, 0, in.op);
        default: {
            bool cmp = in.op >= RF_EX_EQ && in.op <= RF_EX_GE;
            uint64_t b = stack[--sp];
            if (!rf_sops_binary(p, in.op, cmp ? in.arg_type : in.type, in.arg_type, stack[sp - 1], b,
                               &stack[sp - 1]))
                return false;
            break;
        }
        }
    }
    *out = stack[0];
    return true;
}

// ---- Kernels ----
__global__ void k_iota(uint32_t *perm, uint64_t n)
{
    RF_GRID_LOOP(i, n) perm[i] = (uint32_t)i;
}

struct Shifts {
    int s[RF_CUDA_MAX_COLS];
    int bits[RF_CUDA_MAX_COLS];
};

__global__ void k_pack(rf_cols cols, int first, int ncols, Shifts sh, const uint32_t *perm,
                       uint64_t n, uint64_t *keys)
{
    RF_GRID_LOOP(i, n)
    {
        uint64_t row = perm ? perm[i] : i, k = 0;
        for (int j = 0; j < ncols; j++)
            k |= cols.c[first + j][row] << sh.s[j];
        keys[i] = k;
    }
}

// A block's maxima and order flags are folded in shared memory and meet
// the global words once a block (a grid of at most kReduceBlocks, striding
// over the rows), and only where they would change them (a plain read
// first): one atomic a warp on the same four words kept a 9.7M-row pass at
// ~0.9 ms on an H200, waiting on the L2's serialised atomics.
__global__ void k_pair_stats(rf_cols cols, uint64_t n, unsigned long long *out)
{
    __shared__ unsigned long long s_max0[kBlock / 32], s_max1[kBlock / 32];
    __shared__ unsigned s_flags;
    if (threadIdx.x == 0)
        s_flags = 0;
    unsigned long long m0 = 0, m1 = 0;
    unsigned flags = 0;   // 1: not ascending by (second, first); 2: not by (first, second)
    RF_GRID_LOOP(i, n)
    {
        const uint64_t a = cols.c[0][i], b = cols.c[1][i];
        m0 = a > m0 ? a : m0;
        m1 = b > m1 ? b : m1;
        if (i > 0) {   // (the row before: the lane before loaded it, a cache hit)
            const uint64_t pa = cols.c[0][i - 1], pb = cols.c[1][i - 1];
            flags |= (pb < b || (pb == b && pa < a)) ? 0u : 1u;
            flags |= (pa < a || (pa == a && pb < b)) ? 0u : 2u;
        }
    }
    for (int o = 16; o > 0; o >>= 1) {   // every lane reaches here (no early exit)
        const unsigned long long x0 = __shfl_xor_sync(0xffffffffu, m0, o), x1 = __shfl_xor_sync(0xffffffffu, m1, o);
        m0 = x0 > m0 ? x0 : m0;
        m1 = x1 > m1 ? x1 : m1;
    }
    flags = __reduce_or_sync(0xffffffffu, flags);
    __syncthreads();   // (s_flags cleared)
    if ((threadIdx.x & 31) == 0) {
        s_max0[threadIdx.x / 32] = m0;
        s_max1[threadIdx.x / 32] = m1;
        if (flags)
            atomicOr(&s_flags, flags);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < kBlock / 32; w++) {
            m0 = s_max0[w] > m0 ? s_max0[w] : m0;
            m1 = s_max1[w] > m1 ? s_max1[w] : m1;
        }
        volatile unsigned long long *vo = out;
        if (m0 > vo[0])
            atomicMax(&out[0], m0);
        if (m1 > vo[1])
            atomicMax(&out[1], m1);
        if ((s_flags & 1u) && !vo[2])
            atomicOr(&out[2], 1ull);
        if ((s_flags & 2u) && !vo[3])
            atomicOr(&out[3], 1ull);
    }
}

__global__ void k_narrow_pairs(rf_cols cols, uint64_t n, uint32_t *keys, uint32_t *vals)
{
    RF_GRID_LOOP(i, n)
    {
        keys[i] = (uint32_t)cols.c[0][i];
        vals[i] = (uint32_t)cols.c[1][i];
    }
}

__global__ void k_widen_pairs(const uint32_t *keys, const uint32_t *vals, uint64_t n, rf_wcols dst)
{
    RF_GRID_LOOP(i, n)
    {
        dst.c[0][i] = keys[i];
        dst.c[1][i] = vals[i];
    }
}

__global__ void k_unpack(const uint64_t *keys, uint64_t n, int ncols, Shifts sh, rf_wcols dst)
{
    RF_GRID_LOOP(i, n)
    {
        uint64_t k = keys[i];
        for (int j = 0; j < ncols; j++) {
            uint64_t mask = sh.bits[j] >= 64 ? ~0ull : ((1ull << sh.bits[j]) - 1);
            dst.c[j][i] = (k >> sh.s[j]) & mask;
        }
    }
}

__global__ void k_gather(rf_cols src, int ncols, const uint32_t *perm, uint64_t n, rf_wcols dst)
{
    RF_GRID_LOOP(i, n)
    {
        uint64_t r = perm[i];
        for (int c = 0; c < ncols; c++)
            dst.c[c][i] = src.c[c][r];
    }
}

__global__ void k_row_heads(rf_cols cols, int k, uint64_t n, uint8_t *flags)
{
    RF_GRID_LOOP(i, n) flags[i] = i == 0 || cmp_rows(cols, i, cols, i - 1, k) != 0;
}

/* A semi-join's rows: keep[i] := some candidate pair of row i passes
 * (flags[pair], or every pair where flags is NULL). side 0: i is a row of
 * l, keep has nl entries; side 1: i is a row of r (lo[row] + j for the
 * row's pair j), keep cleared by the caller and only set here (every
 * writer writes 1). */
__global__ void k_semi_flags(const uint64_t *lo, const uint64_t *off, uint64_t nl, const uint8_t *flags, int side,
                             uint8_t *keep)
{
    RF_GRID_LOOP(i, nl)
    {
        uint64_t b = off[i], e = off[i + 1];
        if (side == 0) {
            uint8_t any = 0;
            for (uint64_t o = b; o < e && !any; o++)
                any = flags ? flags[o] : 1;
            keep[i] = any;
        } else {
            for (uint64_t o = b; o < e; o++)
                if (!flags || flags[o])
                    keep[lo[i] + (o - b)] = 1;
        }
    }
}

__global__ void k_compact(rf_cols src, int ncols, const uint8_t *flags, const uint64_t *pos,
                          uint64_t n, rf_wcols dst)
{
    RF_GRID_LOOP(i, n)
    {
        if (flags && !flags[i])
            continue;
        uint64_t o = pos ? pos[i] : i;
        for (int c = 0; c < ncols; c++)
            dst.c[c][o] = src.c[c][i];
    }
}

__global__ void k_join_ranges(rf_cols l, uint64_t nl, rf_cols r, uint64_t nr, int k, uint64_t *lo,
                              uint64_t *cnt)
{
    RF_GRID_LOOP(i, nl)
    {
        uint64_t a = lower_bound(r, 0, nr, l, i, k);
        uint64_t b = upper_bound(r, a, nr, l, i, k);
        lo[i] = a;
        cnt[i] = b - a;
    }
}

// ---- Hash join: the ranges of k_join_ranges from a hash table on r ----
// r is sorted, so rows with equal keys are contiguous: the table holds one
// slot pair per distinct key, {first row + 1, end row}, and a probe yields
// exactly the (lo, cnt) of the binary search. Linear probing, 0 = empty.
__device__ __forceinline__ uint64_t hash_row(const rf_cols &a, uint64_t i, int k)
{
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (int c = 0; c < k; c++) {
        uint64_t z = a.c[c][i] + h;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        h = z ^ (z >> 31);
    }
    return h;
}

__global__ void k_hash_build(rf_cols r, uint64_t nr, int k, unsigned long long *slots, uint64_t mask)
{
    RF_GRID_LOOP(i, nr)
    {
        if (i > 0 && cmp_rows(r, i, r, i - 1, k) == 0)
            continue;
        uint64_t h = hash_row(r, i, k) & mask;
        while (atomicCAS(&slots[2 * h], 0ull, (unsigned long long)(i + 1)) != 0ull)
            h = (h + 1) & mask;
    }
}

__global__ void k_hash_ends(rf_cols r, uint64_t nr, int k, unsigned long long *slots, uint64_t mask)
{
    RF_GRID_LOOP(i, nr)
    {
        if (i + 1 < nr && cmp_rows(r, i, r, i + 1, k) == 0)
            continue;
        uint64_t h = hash_row(r, i, k) & mask;
        for (;;) {
            uint64_t s = slots[2 * h];
            if (s != 0 && cmp_rows(r, s - 1, r, i, k) == 0) {
                slots[2 * h + 1] = i + 1;
                break;
            }
            h = (h + 1) & mask;
        }
    }
}

__global__ void k_hash_probe(rf_cols l, uint64_t nl, rf_cols r, int k, const unsigned long long *slots,
                             uint64_t mask, uint64_t *lo, uint64_t *cnt)
{
    RF_GRID_LOOP(i, nl)
    {
        uint64_t h = hash_row(l, i, k) & mask, a = 0, n = 0;
        for (;;) {
            uint64_t s = slots[2 * h];
            if (s == 0)
                break;
            if (cmp_rows(r, s - 1, l, i, k) == 0) {
                a = s - 1;
                n = slots[2 * h + 1] - a;
                break;
            }
            h = (h + 1) & mask;
        }
        lo[i] = a;
        cnt[i] = n;
    }
}

__global__ void k_join_filter(rf_cols l, int al, rf_cols r, const uint64_t *lo, const uint64_t *off,
                              uint64_t nl, uint64_t total, rf_dprog prog, uint8_t *flags)
{
    RF_GRID_LOOP(o, total)
    {
        uint64_t i = owner(off, nl, o);
        uint64_t j = lo[i] + (o - off[i]);
        RowView rv{&l, i, al, &r, j};
        uint64_t v = 0;
        flags[o] = eval(prog, 0, prog.filter_n, rv, &v) && v;
    }
}

__global__ void k_join_emit(rf_cols l, int al, rf_cols r, const uint64_t *lo, const uint64_t *off,
                            uint64_t nl, uint64_t total, const uint8_t *flags, const uint64_t *pos,
                            rf_dprog prog, rf_wcols out)
{
    RF_GRID_LOOP(o, total)
    {
        if (flags && !flags[o])
            continue;
        uint64_t i = owner(off, nl, o);
        uint64_t j = lo[i] + (o - off[i]);
        uint64_t dst = pos ? pos[o] : o;
        RowView rv{&l, i, al, &r, j};
        for (int p = 0; p < prog.nproj; p++) {
            uint64_t v;
            if (!eval(prog, prog.off[p], prog.off[p + 1], rv, &v))
                break;
            out.c[p][dst] = v;
        }
    }
}

// Join into a dense set (rf_cuda_join_to_set): the kept candidate pairs'
// projected rows set bits in `words` instead of being written out, which
// removes duplicates as it goes. Each thread takes kJoinChunk consecutive
// candidates: one owner search, then a walk. src[p] is the (l ++ r) column
// of output column p. counters[0] += bits newly set, counters[1] += rows
// outside the frame (none when the frame was planned from the inputs).
constexpr uint64_t kJoinChunk = 32;

struct SrcCols {
    int c[RF_CUDA_MAX_COLS];
};

__global__ void k_join_insert(rf_cols l, int al, rf_cols r, const uint64_t *lo, const uint64_t *off,
                              uint64_t nl, uint64_t total, const uint8_t *flags, SrcCols src,
                              rf_dframe f, unsigned long long *words, unsigned long long *counters)
{
    unsigned long long added = 0, outside = 0;
    uint64_t nchunks = (total + kJoinChunk - 1) / kJoinChunk;
    RF_GRID_LOOP(ch, nchunks)
    {
        uint64_t o = ch * kJoinChunk, end = o + kJoinChunk < total ? o + kJoinChunk : total;
        uint64_t i = owner(off, nl, o);
        uint64_t next = off[i + 1];
        // Bits bound for one word are gathered and set with one atomic.
        uint64_t word = ~0ull;
        unsigned long long bits = 0;
        for (; o < end; o++) {
            while (o >= next) {
                i++;
                next = off[i + 1];
            }
            if (flags && !flags[o])
                continue;
            uint64_t j = lo[i] + (o - off[i]);
            uint64_t key = 0;
            bool in = true;
            for (int p = 0; p < f.ncols; p++) {
                int c = src.c[p];
                uint64_t d = (c < al ? l.c[c][i] : r.c[c - al][j]) - f.lo[p];
                in = in && d <= f.mask[p];
                key |= d << f.shift[p];
            }
            if (!in) {
                outside++;
                continue;
            }
            if ((key >> 6) != word) {
                if (bits)
                    added += __popcll(bits & ~atomicOr(&words[word], bits));
                word = key >> 6;
                bits = 0;
            }
            bits |= 1ull << (key & 63);
        }
        if (bits)
            added += __popcll(bits & ~atomicOr(&words[word], bits));
    }
    for (int d = 16; d > 0; d >>= 1) {
        added += __shfl_down_sync(0xffffffffu, added, d);
        outside += __shfl_down_sync(0xffffffffu, outside, d);
    }
    if ((threadIdx.x & 31) == 0) {
        if (added)
            atomicAdd(&counters[0], added);
        if (outside)
            atomicAdd(&counters[1], outside);
    }
}

__global__ void k_map_filter(rf_cols in, uint64_t n, rf_dprog prog, uint8_t *flags)
{
    RF_GRID_LOOP(i, n)
    {
        RowView rv{&in, i, RF_CUDA_MAX_COLS, &in, i};
        uint64_t v = 0;
        flags[i] = eval(prog, 0, prog.filter_n, rv, &v) && v;
    }
}

__global__ void k_map_emit(rf_cols in, uint64_t n, const uint8_t *flags, const uint64_t *pos,
                           rf_dprog prog, rf_wcols out)
{
    RF_GRID_LOOP(i, n)
    {
        if (flags && !flags[i])
            continue;
        uint64_t dst = pos ? pos[i] : i;
        RowView rv{&in, i, RF_CUDA_MAX_COLS, &in, i};
        for (int p = 0; p < prog.nproj; p++) {
            uint64_t v;
            if (!eval(prog, prog.off[p], prog.off[p + 1], rv, &v))
                break;
            out.c[p][dst] = v;
        }
    }
}

__global__ void k_eval(rf_cols in, uint64_t n, rf_dprog prog, uint64_t *vals)
{
    RF_GRID_LOOP(i, n)
    {
        RowView rv{&in, i, RF_CUDA_MAX_COLS, &in, i};
        uint64_t v = 0;
        eval(prog, prog.off[0], prog.off[1], rv, &v);
        vals[i] = v;
    }
}

__global__ void k_absent(rf_cols l, uint64_t nl, rf_cols r, uint64_t nr, int k, uint8_t *flags)
{
    RF_GRID_LOOP(i, nl)
    {
        uint64_t a = lower_bound(r, 0, nr, l, i, k);
        flags[i] = !(a < nr && cmp_rows(r, a, l, i, k) == 0);
    }
}

// The same against one more sorted run: a row stays only while absent from
// every run so far (rows already dropped skip the search).
__global__ void k_absent_and(rf_cols l, uint64_t nl, rf_cols r, uint64_t nr, int k, uint8_t *flags)
{
    RF_GRID_LOOP(i, nl)
    {
        if (!flags[i])
            continue;
        uint64_t a = lower_bound(r, 0, nr, l, i, k);
        flags[i] = !(a < nr && cmp_rows(r, a, l, i, k) == 0);
    }
}

// Where the union's searches look (a merge path's partition, coarse):
// bounds[q] = the lower bound in r of row q * RF_UNION_CHUNK of l, q <
// nchunks, and bounds[nchunks] = nr. l being sorted, the lower bound of
// any row of chunk q lies in [bounds[q], bounds[q + 1]]: a window of about
// RF_UNION_CHUNK * nr / nl rows, searched in ~8 steps within cache lines
// that neighbouring threads share, instead of ~30 scattered over all of r.
__global__ void k_union_bounds(rf_cols r, uint64_t nr, rf_cols l, uint64_t nl, int arity, uint64_t *bounds)
{
    const uint64_t nchunks = (nl + RF_UNION_CHUNK - 1) / RF_UNION_CHUNK;
    RF_GRID_LOOP(q, nchunks + 1)
    bounds[q] = q < nchunks ? lower_bound(r, 0, nr, l, q * RF_UNION_CHUNK, arity) : nr;
}

// The window of row j of l in r: all of r without bounds.
__device__ __forceinline__ void union_window(const uint64_t *bounds, uint64_t j, uint64_t nr, uint64_t *lo,
                                             uint64_t *hi)
{
    if (!bounds) {
        *lo = 0;
        *hi = nr;
        return;
    }
    *lo = bounds[j / RF_UNION_CHUNK];
    *hi = bounds[j / RF_UNION_CHUNK + 1];
}

__global__ void k_union_probe(rf_cols a, uint64_t na, rf_cols b, uint64_t nb, int arity, const uint64_t *bounds,
                              uint64_t *lba, uint8_t *keep)
{
    RF_GRID_LOOP(j, nb)
    {
        uint64_t lo, hi;
        union_window(bounds, j, na, &lo, &hi);
        uint64_t x = lower_bound(a, lo, hi, b, j, arity);
        lba[j] = x;
        keep[j] = !(x < na && cmp_rows(a, x, b, j, arity) == 0);
    }
}

__global__ void k_union_scatter_a(rf_cols a, uint64_t na, rf_cols b, uint64_t nb, int arity,
                                  const uint64_t *bounds, const uint64_t *kpre, rf_wcols out)
{
    RF_GRID_LOOP(i, na)
    {
        // kept b rows below a_i: b rows below a_i are [0, lb), all of them
        // kept or not, so count the kept ones with the prefix sum.
        uint64_t lo, hi;
        union_window(bounds, i, nb, &lo, &hi);
        uint64_t lb = lower_bound(b, lo, hi, a, i, arity);
        uint64_t o = i + kpre[lb];
        for (int c = 0; c < arity; c++)
            out.c[c][o] = a.c[c][i];
    }
}

__global__ void k_union_scatter_b(rf_cols b, uint64_t nb, int arity, const uint64_t *lba,
                                  const uint8_t *keep, const uint64_t *kpre, rf_wcols out)
{
    RF_GRID_LOOP(j, nb)
    {
        if (!keep[j])
            continue;
        uint64_t o = lba[j] + kpre[j];
        for (int c = 0; c < arity; c++)
            out.c[c][o] = b.c[c][j];
    }
}

// ---- Union by merge path (rows of one or two columns) ----
// The merged order of sorted, duplicate-free a and b (a's row first where
// they are equal) is cut into tiles of kMergeTile rows: split[t] = how many
// of a's rows lie among the first t * kMergeTile merged rows (the merge
// path's diagonal t * kMergeTile, found by a binary search). A block
// copies its tile's rows of a and of b into shared memory (coalesced),
// each thread finds its kMergeItems rows' diagonal there and merges them;
// a row of b equal to the row of a before it in the merged order is
// dropped (each side is distinct, so a repeated row is always that pair).
// Every row is read twice (the tiles' kept rows counted, then written at
// the scanned offsets), where the searches of the windowed union read
// rows at scattered places once per search step.
constexpr int kMergeItems = 8;
constexpr uint64_t kMergeTile = (uint64_t)kMergeItems * kBlock;

template <int AR>
__device__ __forceinline__ bool row_le(const uint64_t *x, const uint64_t *y)   // x <= y
{
    if (AR == 1 || x[0] != y[0])
        return x[0] <= y[0];
    return x[1] <= y[1];
}

template <int AR>
__global__ void k_merge_split(rf_cols a, uint64_t na, rf_cols b, uint64_t nb, uint64_t ntiles, uint64_t *split)
{
    RF_GRID_LOOP(t, ntiles + 1)
    {
        const uint64_t d = t * kMergeTile < na + nb ? t * kMergeTile : na + nb;
        uint64_t lo = d > nb ? d - nb : 0, hi = d < na ? d : na;
        while (lo < hi) {   // the least i whose a row is not among the first d
            const uint64_t mid = (lo + hi) / 2, j = d - 1 - mid;
            uint64_t x[AR], y[AR];
            for (int c = 0; c < AR; c++) {
                x[c] = a.c[c][mid];
                y[c] = b.c[c][j];
            }
            if (row_le<AR>(x, y))
                lo = mid + 1;
            else
                hi = mid;
        }
        split[t] = lo;
    }
}

// WRITE false: counts[t] := tile t's kept rows; true: writes them from
// offsets[t]. Each thread merges its kMergeItems rows into registers (the
// unrolled loop keeps their indices static) with a bit a kept row; the
// writing pass then stages the tile's kept rows in s_rows, in order, and
// the block copies them out coalesced (a thread writing its own rows
// directly stores 8-byte words 64 bytes apart across a warp: 371 us
// against ~90 for the counting pass on R-MAT 20's 9.5M rows).
template <int AR, bool WRITE>
__global__ void __launch_bounds__(kBlock) k_merge_tiles(rf_cols a, uint64_t na, rf_cols b, uint64_t nb, uint64_t ntiles,
                                                        const uint64_t *split, uint64_t *counts,
                                                        const uint64_t *offsets, rf_wcols out)
{
    __shared__ uint64_t s_rows[AR][kMergeTile];   // the tile's a rows, then its b rows
    __shared__ uint64_t s_before[AR];             // the a row before the tile's first
    __shared__ unsigned s_warp[kBlock / 32];
    for (uint64_t t = blockIdx.x; t < ntiles; t += gridDim.x) {
        const uint64_t d0 = t * kMergeTile, d1 = d0 + kMergeTile < na + nb ? d0 + kMergeTile : na + nb;
        const uint64_t i0 = split[t], j0 = d0 - i0, i1 = split[t + 1], j1 = d1 - i1;
        const uint32_t la = (uint32_t)(i1 - i0), lb = (uint32_t)(j1 - j0), n = la + lb;
        for (uint32_t k = threadIdx.x; k < n; k += kBlock)
            for (int c = 0; c < AR; c++)
                s_rows[c][k] = k < la ? a.c[c][i0 + k] : b.c[c][j0 + (k - la)];
        if (threadIdx.x < AR && i0 > 0)
            s_before[threadIdx.x] = a.c[threadIdx.x][i0 - 1];
        __syncthreads();
        // this thread's merged rows dd .. dd + kMergeItems - 1 of the tile
        const uint32_t dd = threadIdx.x * kMergeItems < n ? threadIdx.x * kMergeItems : n;
        uint32_t lo = dd > lb ? dd - lb : 0, hi = dd < la ? dd : la;
        while (lo < hi) {
            const uint32_t mid = (lo + hi) / 2;
            uint64_t x[AR], y[AR];
            for (int c = 0; c < AR; c++) {
                x[c] = s_rows[c][mid];
                y[c] = s_rows[c][la + dd - 1 - mid];
            }
            if (row_le<AR>(x, y))
                lo = mid + 1;
            else
                hi = mid;
        }
        // kept rows: a's always; b's unless equal to the a row before them
        uint64_t row[kMergeItems][AR];
        unsigned kept_bits = 0;
        {
            uint32_t ii = lo, jj = dd - lo;
#pragma unroll
            for (int k = 0; k < kMergeItems; k++) {
                if (dd + k >= n)
                    break;
                uint64_t x[AR], y[AR];
                bool take_a = jj >= lb;
                if (!take_a && ii < la) {
                    for (int c = 0; c < AR; c++) {
                        x[c] = s_rows[c][ii];
                        y[c] = s_rows[c][la + jj];
                    }
                    take_a = row_le<AR>(x, y);
                }
                if (take_a) {
                    for (int c = 0; c < AR; c++)
                        row[k][c] = s_rows[c][ii];
                    kept_bits |= 1u << k;
                    ii++;
                    continue;
                }
                bool dup = false;
                if (ii > 0 || i0 > 0) {
                    dup = true;
                    for (int c = 0; c < AR; c++)
                        dup = dup && (ii > 0 ? s_rows[c][ii - 1] : s_before[c]) == s_rows[c][la + jj];
                }
                for (int c = 0; c < AR; c++)
                    row[k][c] = s_rows[c][la + jj];
                kept_bits |= (unsigned)!dup << k;
                jj++;
            }
        }
        const unsigned kept = __popc(kept_bits);
        // the block's exclusive scan of kept (warps by shuffles, then the warps')
        const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
        unsigned incl = kept;
        for (int o = 1; o < 32; o <<= 1) {
            const unsigned y = __shfl_up_sync(0xffffffffu, incl, o);
            if (lane >= (unsigned)o)
                incl += y;
        }
        if (lane == 31)
            s_warp[warp] = incl;
        __syncthreads();   // (also: every thread's reads of s_rows done)
        unsigned before = incl - kept, total = 0;
        for (int w = 0; w < kBlock / 32; w++) {
            if (w < (int)warp)
                before += s_warp[w];
            total += s_warp[w];
        }
        if (!WRITE) {
            if (threadIdx.x == 0)
                counts[t] = total;
        } else {
#pragma unroll
            for (int k = 0; k < kMergeItems; k++)
                if (kept_bits >> k & 1) {
                    const unsigned at = before + __popc(kept_bits & ((1u << k) - 1));
                    for (int c = 0; c < AR; c++)
                        s_rows[c][at] = row[k][c];
                }
            __syncthreads();
            const uint64_t base = offsets[t];
            for (uint32_t k = threadIdx.x; k < total; k += kBlock)
                for (int c = 0; c < AR; c++)
                    out.c[c][base + k] = s_rows[c][k];
        }
        __syncthreads();   // (s_rows, s_warp are the next tile's)
    }
}

__global__ void k_seg_starts(const uint8_t *flags, const uint64_t *pos, uint64_t n,
                             uint64_t *starts)
{
    RF_GRID_LOOP(i, n) if (flags[i]) starts[pos[i]] = i;
}

__global__ void k_seg_count(const uint64_t *starts, uint64_t g, uint64_t *out)
{
    RF_GRID_LOOP(i, g) out[i] = starts[i + 1] - starts[i];
}

__global__ void k_seg_fsum(const uint64_t *vals, const uint64_t *starts, uint64_t g, rf_derr *err,
                           uint64_t *out)
{
    RF_GRID_LOOP(s, g)
    {
        double acc = rf_sops_to_f(vals[starts[s]]);
        bool ok = true;
        for (uint64_t i = starts[s] + 1; i < starts[s + 1]; i++) {
            acc = __dadd_rn(acc, rf_sops_to_f(vals[i]));
            if (!isfinite(acc)) {
                ok = fail(err, RF_SERR_FLOAT_OVERFLOW, 0, 0);
                break;
            }
        }
        out[s] = ok ? rf_sops_from_f(acc) : 0;
    }
}

// avg of float64 values: the in-order sum of k_seg_fsum, then / count
// (rf_agg_ops.h), one thread a segment.
__global__ void k_seg_favg(const uint64_t *vals, const uint64_t *starts, uint64_t g, rf_derr *err,
                           uint64_t *out)
{
    RF_GRID_LOOP(s, g)
    {
        uint64_t b = starts[s], e = starts[s + 1];
        double acc = rf_sops_to_f(vals[b]);
        bool ok = true;
        for (uint64_t i = b + 1; i < e; i++) {
            acc = __dadd_rn(acc, rf_sops_to_f(vals[i]));
            if (!isfinite(acc)) {
                ok = fail(err, RF_SERR_FLOAT_OVERFLOW, 0, 0);
                break;
            }
        }
        out[s] = ok ? rf_sops_from_f(rf_avg_float(acc, e - b)) : 0;
    }
}

// ---- Exact integer/decimal sums per segment (total, avg) ----
// The rows are sorted by group, so a group is a run of rows. A warp takes a
// tile of 32 * kSumRowsPerLane rows, its lanes interleaved (coalesced
// loads); each lane adds its rows into a 128-bit sum while they stay in one
// group and flushes on a change. Lanes that all end in lane 0's group (the
// common case when groups are large: Q1 has 4 groups over 6M rows per SF)
// are combined by shuffles first, so one pair of atomics serves the warp.
// The sum is associative, so the result does not depend on the order.
constexpr int kSumRowsPerLane = 16;
constexpr unsigned kFullMask = 0xffffffffu;

__device__ __forceinline__ void add128_atomic(unsigned long long *cell, rf_sum128 v)
{
    unsigned long long old = atomicAdd(&cell[0], (unsigned long long)v.lo);
    unsigned long long carry = old + (unsigned long long)v.lo < old ? 1ull : 0ull;
    unsigned long long h = (unsigned long long)v.hi + carry;
    if (h)
        atomicAdd(&cell[1], h);
}

__global__ void k_seg_sum128(const uint64_t *vals, const uint8_t *flags, const uint64_t *pos,
                             uint64_t n, unsigned long long *sums)
{
    const uint64_t warp = ((uint64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const unsigned lane = threadIdx.x & 31;
    const uint64_t base = warp * 32 * kSumRowsPerLane;
    rf_sum128 acc = {0, 0};
    uint64_t seg = UINT64_MAX;
    for (int k = 0; k < kSumRowsPerLane; k++) {
        uint64_t i = base + (uint64_t)k * 32 + lane;
        if (i >= n)
            break;
        uint64_t g = pos[i] + flags[i] - 1; // pos: exclusive scan of the group heads
        if (g != seg) {
            if (seg != UINT64_MAX)
                add128_atomic(sums + 2 * seg, acc);
            seg = g;
            acc.lo = 0;
            acc.hi = 0;
        }
        rf_sum128_add(&acc, (int64_t)vals[i]);
    }
    uint64_t seg0 = __shfl_sync(kFullMask, seg, 0);
    if (__all_sync(kFullMask, seg == seg0)) {
        for (int off = 16; off > 0; off >>= 1) {
            rf_sum128 o;
            o.lo = __shfl_down_sync(kFullMask, acc.lo, off);
            o.hi = __shfl_down_sync(kFullMask, (long long)acc.hi, off);
            rf_sum128_merge(&acc, o);
        }
        if (lane == 0 && seg != UINT64_MAX)
            add128_atomic(sums + 2 * seg, acc);
    } else if (seg != UINT64_MAX) {
        add128_atomic(sums + 2 * seg, acc);
    }
}

// total: the exact sum if it fits the result type, else a fault.
__global__ void k_seg_total_finish(const unsigned long long *sums, uint64_t g, int type, rf_derr *err,
                                   uint64_t *out)
{
    RF_GRID_LOOP(s, g)
    {
        rf_sum128 v = {sums[2 * s], (int64_t)sums[2 * s + 1]};
        int64_t r;
        if (rf_sum128_to_i64(v, &r) && rf_sops_fits(type, r)) {
            out[s] = (uint64_t)r;
        } else {
            fail2(err, RF_SERR_TOTAL_RANGE, v.lo, (uint64_t)v.hi, type);
            out[s] = 0;
        }
    }
}

// avg of integer or decimal[scale] words from the exact sums.
__global__ void k_seg_iavg_finish(const unsigned long long *sums, const uint64_t *starts, uint64_t g,
                                  int scale, uint64_t *out)
{
    RF_GRID_LOOP(s, g)
    {
        rf_sum128 v = {sums[2 * s], (int64_t)sums[2 * s + 1]};
        out[s] = rf_sops_from_f(rf_avg_exact(v, starts[s + 1] - starts[s], scale));
    }
}

__global__ void k_row_groups(const uint64_t *starts, uint64_t g, uint64_t n, uint64_t *gid)
{
    RF_GRID_LOOP(i, n) gid[i] = owner(starts, g, i);
}

__global__ void k_count_by_group(const uint64_t *gid, uint64_t n, uint64_t *out)
{
    RF_GRID_LOOP(i, n) atomicAdd((unsigned long long *)&out[gid[i]], 1ull);
}

__global__ void k_gather_rows(rf_cols src, int ncols, const uint64_t *rows, uint64_t n,
                              rf_wcols dst)
{
    RF_GRID_LOOP(i, n)
    {
        uint64_t r = rows[i];
        for (int c = 0; c < ncols; c++)
            dst.c[c][i] = src.c[c][r];
    }
}

__global__ void k_scan_tail(const uint8_t *flags, uint64_t *pos, uint64_t n)
{
    pos[n] = pos[n - 1] + flags[n - 1];
}

__global__ void k_fill(uint64_t *p, uint64_t n, uint64_t v)
{
    RF_GRID_LOOP(i, n) p[i] = v;
}

__global__ void k_add_const(uint64_t *p, uint64_t n, uint64_t v)
{
    RF_GRID_LOOP(i, n) p[i] += v;
}

Shifts make_shifts(const int *shift, const int *bits, int n)
{
    Shifts s{};
    for (int j = 0; j < n && j < RF_CUDA_MAX_COLS; j++) {
        s.s[j] = shift[j];
        s.bits[j] = bits ? bits[j] : 64;
    }
    return s;
}

// ---- A small relation sorted and deduplicated by one block ----
// The rows (n <= RF_SMALL_SORT_ROWS, n x arity <= RF_SMALL_SORT_WORDS) are
// loaded into shared memory; a bitonic sort of their indices (padded to a
// power of two with indices that sort last) orders them as the radix path
// does (columns compared as unsigned words, first column first); then each
// row unlike its predecessor is written at its place from a block scan, and
// *total gets the count. One launch and no temporary memory, where the
// general path (maxima, a wait, pack, radix passes, heads, scan, a wait,
// unpack) costs ~75 us however few the rows: a semi-naive loop's last
// iterations sort a handful of rows.
__device__ __forceinline__ bool row_less(const uint64_t *rows, int a, int npad, unsigned x, unsigned y, unsigned n)
{
    if (y >= n)
        return x < n || x < y;   // padding sorts last, among itself by index
    if (x >= n)
        return false;
    for (int k = 0; k < a; k++) {
        uint64_t u = rows[(size_t)k * npad + x], v = rows[(size_t)k * npad + y];
        if (u != v)
            return u < v;
    }
    return x < y;   // equal rows: any fixed order
}

// Exclusive scan of each thread's `mine` over the block: within each warp
// by shuffles, then the warps' totals by warp 0. Returns the thread's
// offset; *total (thread 0's view is enough) gets the sum. `scan` holds a
// word a warp.
__device__ unsigned block_exclusive_scan(unsigned mine, unsigned *scan, unsigned long long *total)
{
    unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = (blockDim.x + 31) >> 5;
    unsigned incl = mine;
    for (int d = 1; d < 32; d <<= 1) {
        unsigned v = __shfl_up_sync(0xffffffffu, incl, d);
        if ((int)lane >= d)
            incl += v;
    }
    if (lane == 31)
        scan[warp] = incl;
    __syncthreads();
    if (warp == 0) {
        unsigned t = lane < nwarps ? scan[lane] : 0, ti = t;
        for (int d = 1; d < 32; d <<= 1) {
            unsigned v = __shfl_up_sync(0xffffffffu, ti, d);
            if ((int)lane >= d)
                ti += v;
        }
        if (lane < nwarps)
            scan[lane] = ti - t;   // exclusive: the warps before
        if (lane == nwarps - 1)
            *total = ti;
    }
    __syncthreads();
    return scan[warp] + incl - mine;
}

// When the columns' bits in use fit one word (graph relations: two columns
// of node ids), each row becomes one key, column 0 in the high bits, and the
// bitonic network compares keys instead of rows through an index: one
// shared-memory read a side instead of up to 2 * arity. Padding keys are
// all ones: they sort last, and a real key equal to them is the same value,
// so the first n keys are the rows. Otherwise rows are compared through idx.
__global__ void k_small_sort_unique(rf_cols in, int a, unsigned n, unsigned npad, rf_wcols out,
                                    unsigned long long *total)
{
    extern __shared__ uint64_t sh[];
    uint64_t *rows = sh;                                             // [a][npad]
    uint64_t *keys = rows + (size_t)a * npad;                        // [npad]
    unsigned *idx = reinterpret_cast<unsigned *>(keys + npad);       // [npad]
    unsigned *scan = idx + npad;                                     // [32]: a word a warp
    __shared__ unsigned long long colmax[RF_CUDA_MAX_COLS];
    __shared__ int shift[RF_CUDA_MAX_COLS];
    __shared__ bool packed;
    if (threadIdx.x < (unsigned)a)
        colmax[threadIdx.x] = 0;
    __syncthreads();
    for (unsigned i = threadIdx.x; i < npad; i += blockDim.x) {
        idx[i] = i;
        for (int k = 0; k < a; k++) {
            uint64_t v = i < n ? in.c[k][i] : 0;
            rows[(size_t)k * npad + i] = v;
            if (i < n && v)
                atomicMax(&colmax[k], (unsigned long long)v);
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        int bits = 0;
        for (int k = a - 1; k >= 0; k--) {
            shift[k] = bits;
            bits += colmax[k] ? 64 - __clzll((long long)colmax[k]) : 0;
        }
        packed = bits <= 64 && a > 0;
    }
    __syncthreads();
    if (packed) {
        for (unsigned i = threadIdx.x; i < npad; i += blockDim.x) {
            uint64_t key = ~0ull;
            if (i < n) {
                key = 0;
                for (int k = 0; k < a; k++)
                    key |= shift[k] < 64 ? rows[(size_t)k * npad + i] << shift[k] : 0;
            }
            keys[i] = key;
        }
        __syncthreads();
        for (unsigned size = 2; size <= npad; size <<= 1)
            for (unsigned stride = size >> 1; stride > 0; stride >>= 1) {
                for (unsigned t = threadIdx.x; t < npad / 2; t += blockDim.x) {
                    // the pair's lower index: t with a zero bit inserted at `stride`
                    unsigned i = ((t & ~(stride - 1)) << 1) | (t & (stride - 1)), j = i | stride;
                    bool up = (i & size) == 0;
                    uint64_t x = keys[i], y = keys[j];
                    if ((y < x) == up) {
                        keys[i] = y;
                        keys[j] = x;
                    }
                }
                __syncthreads();
            }
        unsigned per = (npad + blockDim.x - 1) / blockDim.x, first = threadIdx.x * per, mine = 0;
        for (unsigned i = first; i < first + per && i < n; i++)
            mine += i == 0 || keys[i] != keys[i - 1];
        unsigned at = block_exclusive_scan(mine, scan, total);
        for (unsigned i = first; i < first + per && i < n; i++)
            if (i == 0 || keys[i] != keys[i - 1]) {
                for (int k = 0; k < a; k++) {
                    int width = (k == 0 ? 64 : shift[k - 1]) - shift[k];
                    uint64_t v = shift[k] < 64 ? keys[i] >> shift[k] : 0;
                    out.c[k][at] = width >= 64 ? v : v & ((1ull << width) - 1);
                }
                at++;
            }
        return;
    }
    for (unsigned size = 2; size <= npad; size <<= 1)
        for (unsigned stride = size >> 1; stride > 0; stride >>= 1) {
            for (unsigned i = threadIdx.x; i < npad; i += blockDim.x) {
                unsigned j = i ^ stride;
                if (j > i) {
                    bool up = (i & size) == 0;
                    unsigned x = idx[i], y = idx[j];
                    if (row_less(rows, a, npad, y, x, n) == up) {
                        idx[i] = y;
                        idx[j] = x;
                    }
                }
            }
            __syncthreads();
        }
    // Heads, then a scan of each thread's count over its consecutive run of
    // positions (per = npad / blockDim.x, or 1), then the writes.
    unsigned per = (npad + blockDim.x - 1) / blockDim.x, first = threadIdx.x * per, mine = 0;
    for (unsigned i = first; i < first + per && i < n; i++) {
        bool head = i == 0;
        for (int k = 0; !head && k < a; k++)
            head = rows[(size_t)k * npad + idx[i]] != rows[(size_t)k * npad + idx[i - 1]];
        mine += head;
    }
    unsigned at = block_exclusive_scan(mine, scan, total);
    for (unsigned i = first; i < first + per && i < n; i++) {
        bool head = i == 0;
        for (int k = 0; !head && k < a; k++)
            head = rows[(size_t)k * npad + idx[i]] != rows[(size_t)k * npad + idx[i - 1]];
        if (head) {
            for (int k = 0; k < a; k++)
                out.c[k][at] = rows[(size_t)k * npad + idx[i]];
            at++;
        }
    }
}

// Tests: one thread spinning `cycles` clock cycles, so that what is queued
// after it on the stream waits (test_gpu_prims: copies that must not
// overtake the stream's queued kernels).
__global__ void k_test_delay(long long cycles)
{
    const long long t0 = clock64();
    while (clock64() - t0 < cycles) {
    }
}

} // namespace

#define LAUNCH(kernel, n, s, ...)                                                     \
    do {                                                                              \
        if ((n) == 0)                                                                 \
            return cudaSuccess;                                                       \
        kernel<<<grid_for(n), kBlock, 0, s>>>(__VA_ARGS__);                           \
        return cudaGetLastError();                                                    \
    } while (0)

extern "C" {

cudaError_t rf_k_iota(cudaStream_t s, uint32_t *perm, size_t n) { LAUNCH(k_iota, n, s, perm, n); }

cudaError_t rf_k_pack(cudaStream_t s, rf_cols cols, int first, int ncols, const int *shift_host,
                      const uint32_t *perm, size_t n, uint64_t *keys)
{
    LAUNCH(k_pack, n, s, cols, first, ncols, make_shifts(shift_host, nullptr, ncols), perm, n,
           keys);
}

cudaError_t rf_k_unpack(cudaStream_t s, const uint64_t *keys, size_t n, int ncols,
                        const int *shift_host, const int *bits_host, rf_wcols dst)
{
    LAUNCH(k_unpack, n, s, keys, n, ncols, make_shifts(shift_host, bits_host, ncols),
           dst);
}

cudaError_t rf_k_pair_stats(cudaStream_t s, rf_cols cols, size_t n, unsigned long long *out)
{
    if (n == 0)
        return cudaSuccess;
    k_pair_stats<<<reduce_grid_for(n), kBlock, 0, s>>>(cols, n, out);
    return cudaGetLastError();
}

cudaError_t rf_k_narrow_pairs(cudaStream_t s, rf_cols cols, size_t n, uint32_t *keys, uint32_t *vals)
{
    LAUNCH(k_narrow_pairs, n, s, cols, n, keys, vals);
}

cudaError_t rf_k_widen_pairs(cudaStream_t s, const uint32_t *keys, const uint32_t *vals, size_t n, rf_wcols dst)
{
    LAUNCH(k_widen_pairs, n, s, keys, vals, n, dst);
}

cudaError_t rf_k_gather(cudaStream_t s, rf_cols src, int ncols, const uint32_t *perm, size_t n,
                        rf_wcols dst)
{
    LAUNCH(k_gather, n, s, src, ncols, perm, n, dst);
}

cudaError_t rf_k_small_sort_unique(cudaStream_t s, rf_cols in, int arity, size_t n, rf_wcols out,
                                   unsigned long long *total)
{
    unsigned npad = 1;
    while (npad < n)
        npad <<= 1;
    if (n == 0 || n > RF_SMALL_SORT_ROWS || (size_t)npad * (size_t)arity > RF_SMALL_SORT_WORDS)
        return cudaErrorInvalidValue;
    unsigned threads = npad < 1024 ? (npad < 32 ? 32 : npad) : 1024;
    size_t shared = (size_t)npad * (size_t)arity * 8 + (size_t)npad * 8 + (size_t)npad * 4 + 32 * 4;
    if (shared > 48 * 1024) {   // beyond the default: ask for it (sm_90 allows 227 KB a block)
        static size_t granted;
        if (shared > granted) {
            cudaError_t e = cudaFuncSetAttribute(k_small_sort_unique, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                 (int)shared);
            if (e != cudaSuccess)
                return e;
            granted = shared;
        }
    }
    k_small_sort_unique<<<1, threads, shared, s>>>(in, arity, (unsigned)n, npad, out, total);
    return cudaGetLastError();
}

cudaError_t rf_k_row_heads(cudaStream_t s, rf_cols cols, int k, size_t n, uint8_t *flags)
{
    LAUNCH(k_row_heads, n, s, cols, k, n, flags);
}

cudaError_t rf_k_semi_flags(cudaStream_t s, const uint64_t *lo, const uint64_t *off, size_t nl,
                            const uint8_t *flags, int side, uint8_t *keep)
{
    LAUNCH(k_semi_flags, nl, s, lo, off, nl, flags, side, keep);
}

cudaError_t rf_k_compact(cudaStream_t s, rf_cols src, int ncols, const uint8_t *flags,
                         const uint64_t *pos, size_t n, rf_wcols dst)
{
    LAUNCH(k_compact, n, s, src, ncols, flags, pos, n, dst);
}

cudaError_t rf_k_join_ranges(cudaStream_t s, rf_cols l, size_t nl, rf_cols r, size_t nr, int k,
                             uint64_t *lo, uint64_t *cnt)
{
    LAUNCH(k_join_ranges, nl, s, l, nl, r, nr, k, lo, cnt);
}

cudaError_t rf_k_hash_ranges(cudaStream_t s, rf_cols l, size_t nl, rf_cols r, size_t nr, int k,
                             uint64_t *slots, uint64_t mask, uint64_t *lo, uint64_t *cnt)
{
    cudaError_t e = cudaMemsetAsync(slots, 0, (size_t)(mask + 1) * 16, s);
    if (e != cudaSuccess)
        return e;
    unsigned long long *sl = (unsigned long long *)slots;
    k_hash_build<<<grid_for(nr), kBlock, 0, s>>>(r, nr, k, sl, mask);
    k_hash_ends<<<grid_for(nr), kBlock, 0, s>>>(r, nr, k, sl, mask);
    k_hash_probe<<<grid_for(nl), kBlock, 0, s>>>(l, nl, r, k, sl, mask, lo, cnt);
    return cudaGetLastError();
}

cudaError_t rf_k_join_filter(cudaStream_t s, rf_cols l, int al, rf_cols r, const uint64_t *lo,
                             const uint64_t *off, size_t nl, size_t total, rf_dprog prog,
                             uint8_t *flags)
{
    LAUNCH(k_join_filter, total, s, l, al, r, lo, off, nl, total, prog, flags);
}

cudaError_t rf_k_join_emit(cudaStream_t s, rf_cols l, int al, rf_cols r, const uint64_t *lo,
                           const uint64_t *off, size_t nl, size_t total, const uint8_t *flags,
                           const uint64_t *pos, rf_dprog prog, rf_wcols out)
{
    LAUNCH(k_join_emit, total, s, l, al, r, lo, off, nl, total, flags, pos, prog, out);
}

cudaError_t rf_k_join_insert(cudaStream_t s, rf_cols l, int al, rf_cols r, const uint64_t *lo,
                             const uint64_t *off, size_t nl, size_t total, const uint8_t *flags,
                             const int *src_host, rf_dframe f, uint64_t *words, uint64_t *counters)
{
    SrcCols src{};
    for (int p = 0; p < f.ncols && p < RF_CUDA_MAX_COLS; p++)
        src.c[p] = src_host[p];
    uint64_t nchunks = (total + kJoinChunk - 1) / kJoinChunk;
    LAUNCH(k_join_insert, nchunks, s, l, al, r, lo, off, nl, total, flags, src, f,
           (unsigned long long *)words, (unsigned long long *)counters);
}

cudaError_t rf_k_map_filter(cudaStream_t s, rf_cols in, size_t n, rf_dprog prog, uint8_t *flags)
{
    LAUNCH(k_map_filter, n, s, in, n, prog, flags);
}

cudaError_t rf_k_map_emit(cudaStream_t s, rf_cols in, size_t n, const uint8_t *flags,
                          const uint64_t *pos, rf_dprog prog, rf_wcols out)
{
    LAUNCH(k_map_emit, n, s, in, n, flags, pos, prog, out);
}

cudaError_t rf_k_absent(cudaStream_t s, rf_cols l, size_t nl, rf_cols r, size_t nr, int k,
                        uint8_t *flags)
{
    LAUNCH(k_absent, nl, s, l, nl, r, nr, k, flags);
}

cudaError_t rf_k_absent_and(cudaStream_t s, rf_cols l, size_t nl, rf_cols r, size_t nr, int k,
                            uint8_t *flags)
{
    LAUNCH(k_absent_and, nl, s, l, nl, r, nr, k, flags);
}

cudaError_t rf_k_union_bounds(cudaStream_t s, rf_cols r, size_t nr, rf_cols l, size_t nl, int arity,
                              uint64_t *bounds)
{
    LAUNCH(k_union_bounds, (nl + RF_UNION_CHUNK - 1) / RF_UNION_CHUNK + 1, s, r, nr, l, nl, arity, bounds);
}

cudaError_t rf_k_union_probe(cudaStream_t s, rf_cols a, size_t na, rf_cols b, size_t nb,
                             int arity, const uint64_t *bounds, uint64_t *lba, uint8_t *keep)
{
    LAUNCH(k_union_probe, nb, s, a, na, b, nb, arity, bounds, lba, keep);
}

cudaError_t rf_k_union_scatter_a(cudaStream_t s, rf_cols a, size_t na, rf_cols b, size_t nb,
                                 int arity, const uint64_t *bounds, const uint64_t *kpre, rf_wcols out)
{
    LAUNCH(k_union_scatter_a, na, s, a, na, b, nb, arity, bounds, kpre, out);
}

cudaError_t rf_k_union_scatter_b(cudaStream_t s, rf_cols b, size_t nb, int arity,
                                 const uint64_t *lba, const uint8_t *keep, const uint64_t *kpre,
                                 rf_wcols out)
{
    LAUNCH(k_union_scatter_b, nb, s, b, nb, arity, lba, keep, kpre, out);
}

cudaError_t rf_k_test_delay(cudaStream_t s, long long cycles)
{
    k_test_delay<<<1, 1, 0, s>>>(cycles);
    return cudaGetLastError();
}

uint64_t rf_k_merge_tiles_of(size_t na, size_t nb) { return (na + nb + kMergeTile - 1) / kMergeTile; }

cudaError_t rf_k_merge_split(cudaStream_t s, rf_cols a, size_t na, rf_cols b, size_t nb, int arity, uint64_t *split)
{
    const uint64_t ntiles = rf_k_merge_tiles_of(na, nb);
    if (arity == 1)
        k_merge_split<1><<<grid_for(ntiles + 1), kBlock, 0, s>>>(a, na, b, nb, ntiles, split);
    else
        k_merge_split<2><<<grid_for(ntiles + 1), kBlock, 0, s>>>(a, na, b, nb, ntiles, split);
    return cudaGetLastError();
}

cudaError_t rf_k_merge_count(cudaStream_t s, rf_cols a, size_t na, rf_cols b, size_t nb, int arity,
                             const uint64_t *split, uint64_t *counts)
{
    const uint64_t ntiles = rf_k_merge_tiles_of(na, nb);
    if (ntiles == 0)
        return cudaSuccess;
    const unsigned grid = ntiles < 65535u * 16u ? (unsigned)ntiles : 65535u * 16u;
    rf_wcols none = {};
    if (arity == 1)
        k_merge_tiles<1, false><<<grid, kBlock, 0, s>>>(a, na, b, nb, ntiles, split, counts, nullptr, none);
    else
        k_merge_tiles<2, false><<<grid, kBlock, 0, s>>>(a, na, b, nb, ntiles, split, counts, nullptr, none);
    return cudaGetLastError();
}

cudaError_t rf_k_merge_write(cudaStream_t s, rf_cols a, size_t na, rf_cols b, size_t nb, int arity,
                             const uint64_t *split, const uint64_t *offsets, rf_wcols out)
{
    const uint64_t ntiles = rf_k_merge_tiles_of(na, nb);
    if (ntiles == 0)
        return cudaSuccess;
    const unsigned grid = ntiles < 65535u * 16u ? (unsigned)ntiles : 65535u * 16u;
    if (arity == 1)
        k_merge_tiles<1, true><<<grid, kBlock, 0, s>>>(a, na, b, nb, ntiles, split, nullptr, offsets, out);
    else
        k_merge_tiles<2, true><<<grid, kBlock, 0, s>>>(a, na, b, nb, ntiles, split, nullptr, offsets, out);
    return cudaGetLastError();
}

cudaError_t rf_k_seg_starts(cudaStream_t s, const uint8_t *flags, const uint64_t *pos, size_t n,
                            uint64_t *starts)
{
    LAUNCH(k_seg_starts, n, s, flags, pos, n, starts);
}

cudaError_t rf_k_eval(cudaStream_t s, rf_cols in, size_t n, rf_dprog prog, uint64_t *vals)
{
    LAUNCH(k_eval, n, s, in, n, prog, vals);
}

cudaError_t rf_k_seg_count(cudaStream_t s, const uint64_t *starts, size_t g, uint64_t *out)
{
    LAUNCH(k_seg_count, g, s, starts, g, out);
}

cudaError_t rf_k_seg_fsum(cudaStream_t s, const uint64_t *vals, const uint64_t *starts, size_t g,
                          rf_derr *err, uint64_t *out)
{
    LAUNCH(k_seg_fsum, g, s, vals, starts, g, err, out);
}

cudaError_t rf_k_seg_favg(cudaStream_t s, const uint64_t *vals, const uint64_t *starts, size_t g,
                          rf_derr *err, uint64_t *out)
{
    LAUNCH(k_seg_favg, g, s, vals, starts, g, err, out);
}

cudaError_t rf_k_seg_sum128(cudaStream_t s, const uint64_t *vals, const uint8_t *flags, const uint64_t *pos,
                            size_t n, unsigned long long *sums)
{
    if (n == 0)
        return cudaSuccess;
    size_t per_block = (size_t)kBlock * kSumRowsPerLane;
    size_t blocks = (n + per_block - 1) / per_block;
    if (blocks > 0x7fffffffu)
        return cudaErrorInvalidValue;
    k_seg_sum128<<<(unsigned)blocks, kBlock, 0, s>>>(vals, flags, pos, n, sums);
    return cudaGetLastError();
}

cudaError_t rf_k_seg_total_finish(cudaStream_t s, const unsigned long long *sums, size_t g, int type,
                                  rf_derr *err, uint64_t *out)
{
    LAUNCH(k_seg_total_finish, g, s, sums, g, type, err, out);
}

cudaError_t rf_k_seg_iavg_finish(cudaStream_t s, const unsigned long long *sums, const uint64_t *starts,
                                 size_t g, int scale, uint64_t *out)
{
    LAUNCH(k_seg_iavg_finish, g, s, sums, starts, g, scale, out);
}

cudaError_t rf_k_row_groups(cudaStream_t s, const uint64_t *starts, size_t g, size_t n, uint64_t *gid)
{
    LAUNCH(k_row_groups, n, s, starts, g, n, gid);
}

cudaError_t rf_k_count_by_group(cudaStream_t s, const uint64_t *gid, size_t n, uint64_t *out)
{
    LAUNCH(k_count_by_group, n, s, gid, n, out);
}


cudaError_t rf_k_gather_rows(cudaStream_t s, rf_cols src, int ncols, const uint64_t *rows,
                             size_t n, rf_wcols dst)
{
    LAUNCH(k_gather_rows, n, s, src, ncols, rows, n, dst);
}

cudaError_t rf_k_scan_tail(cudaStream_t s, const uint8_t *flags, uint64_t *pos, size_t n)
{
    LAUNCH(k_scan_tail, 1, s, flags, pos, n);
}

cudaError_t rf_k_fill(cudaStream_t s, uint64_t *p, size_t n, uint64_t v)
{
    LAUNCH(k_fill, n, s, p, n, v);
}

cudaError_t rf_k_add_const(cudaStream_t s, uint64_t *p, size_t n, uint64_t v)
{
    LAUNCH(k_add_const, n, s, p, n, v);
}

} // extern "C"

// ---- Hash aggregation (Kernel Weaver's reducing gather) ----
// Rows of an unsorted, duplicate-free relation fold into groups found by
// hashing their key columns: no sort. The table holds `cap` slots (a power
// of two) of nkeys words each and a state per slot (0 empty, 1 being
// written, 2 ready); `claimed` counts slots taken, and past cap/2 the
// insert gives up (`overflow`), so the caller can sort instead.

__device__ __forceinline__ uint64_t hash_key_words(const rf_cols &c, int nk, uint64_t i)
{
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (int k = 0; k < nk; k++) {
        h ^= c.c[k][i];
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    return h;
}

__global__ void k_hash_groups(rf_cols in, int nk, uint64_t n, uint64_t stride, uint64_t *keys, unsigned *state,
                              uint64_t cap, unsigned long long *claimed, unsigned *overflow, uint64_t *gid)
{
    RF_GRID_LOOP(j, n)
    {
        uint64_t i = j * stride; // every stride-th row (a sample), else every row
        if (*(volatile unsigned *)overflow)
            return;
        uint64_t s = hash_key_words(in, nk, i) & (cap - 1);
        for (uint64_t probes = 0;; probes++) {
            if (probes >= cap) {
                atomicExch(overflow, 1u);
                return;
            }
            unsigned st = *(volatile unsigned *)&state[s];
            if (st == 0) {
                if (atomicCAS(&state[s], 0u, 1u) == 0u) {
                    if (atomicAdd(claimed, 1ull) >= cap / 2)
                        atomicExch(overflow, 1u);
                    for (int k = 0; k < nk; k++)
                        keys[(uint64_t)k * cap + s] = in.c[k][i];
                    __threadfence();
                    atomicExch(&state[s], 2u);
                    gid[j] = s;
                    break;
                }
                continue; // lost the race: look at the slot again
            }
            while (st == 1)
                st = *(volatile unsigned *)&state[s];
            bool same = true;
            for (int k = 0; k < nk && same; k++)
                same = ((volatile uint64_t *)keys)[(uint64_t)k * cap + s] == in.c[k][i];
            if (same) {
                gid[j] = s;
                break;
            }
            s = (s + 1) & (cap - 1);
        }
    }
}

__global__ void k_slot_flags(const unsigned *state, uint64_t cap, uint8_t *flags)
{
    RF_GRID_LOOP(s, cap) flags[s] = state[s] == 2u;
}

// Group g's keys from its slot; slot -> group number in `group_of`.
__global__ void k_slot_groups(const uint8_t *flags, const uint64_t *pos, const uint64_t *keys, uint64_t cap,
                              int nk, uint64_t *group_of, rf_wcols out)
{
    RF_GRID_LOOP(s, cap)
    {
        if (!flags[s])
            continue;
        uint64_t g = pos[s];
        group_of[s] = g;
        for (int k = 0; k < nk; k++)
            out.c[k][g] = keys[(uint64_t)k * cap + s];
    }
}

__global__ void k_renumber(uint64_t *gid, const uint64_t *group_of, uint64_t n)
{
    RF_GRID_LOOP(i, n) gid[i] = group_of[gid[i]];
}

// One aggregate's rows into their groups. kind: 0 count, 1 exact sum
// (128-bit, acc 2 words a group), 2 min, 3 max of signed words. Few
// groups: each block folds into shared memory first, then once into acc.
enum { kHashCount = 0, kHashSum = 1, kHashMin = 2, kHashMax = 3 };
constexpr int kHashSharedGroups = 512;

__device__ __forceinline__ void fold_one(int kind, unsigned long long *acc, uint64_t g, uint64_t v)
{
    switch (kind) {
    case kHashCount: atomicAdd(&acc[g], 1ull); break;
    case kHashSum: {
        rf_sum128 x = {v, (int64_t)v < 0 ? -1 : 0};
        add128_atomic(acc + 2 * g, x);
        break;
    }
    case kHashMin: atomicMin((long long *)&acc[g], (long long)v); break;
    default: atomicMax((long long *)&acc[g], (long long)v); break;
    }
}

// Each thread folds a contiguous run of rows, keeping one running
// accumulator while the group stays the same (one group, or input grouped
// by key: one atomic per run, not per row); few groups fold into shared
// memory first, then once per block into acc.
__device__ __forceinline__ void flush_run(int kind, unsigned long long *acc, uint64_t g, rf_sum128 run,
                                          uint64_t cnt, uint64_t best)
{
    switch (kind) {
    case kHashCount: atomicAdd(&acc[g], (unsigned long long)cnt); break;
    case kHashSum: add128_atomic(acc + 2 * g, run); break;
    default: fold_one(kind, acc, g, best); break;
    }
}

__global__ void k_hash_fold(int kind, const uint64_t *vals, const uint64_t *gid, uint64_t n, uint64_t groups,
                            unsigned long long *acc)
{
    __shared__ unsigned long long sh[2 * kHashSharedGroups];
    bool shared = groups <= kHashSharedGroups;
    unsigned long long init = kind == kHashMin ? (unsigned long long)INT64_MAX
                              : kind == kHashMax ? (unsigned long long)INT64_MIN : 0ull;
    if (shared)
        for (uint64_t j = threadIdx.x; j < 2 * groups; j += blockDim.x)
            sh[j] = init;
    __syncthreads();
    unsigned long long *dst = shared ? sh : acc;
    uint64_t threads = (uint64_t)gridDim.x * blockDim.x;
    uint64_t per = (n + threads - 1) / threads;
    uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    uint64_t b = t * per, e = b + per < n ? b + per : n;
    uint64_t cur = UINT64_MAX, cnt = 0, best = 0;
    rf_sum128 run = {0, 0};
    for (uint64_t i = b; i < e; i++) {
        uint64_t g = gid[i], v = vals ? vals[i] : 0;
        if (g != cur) {
            if (cur != UINT64_MAX)
                flush_run(kind, dst, cur, run, cnt, best);
            cur = g;
            cnt = 0;
            run.lo = 0;
            run.hi = 0;
            best = v;
        }
        cnt++;
        if (kind == kHashSum)
            rf_sum128_add(&run, (int64_t)v);
        else if (kind == kHashMin ? (int64_t)v < (int64_t)best : (int64_t)v > (int64_t)best)
            best = v;
    }
    if (cur != UINT64_MAX)
        flush_run(kind, dst, cur, run, cnt, best);
    __syncthreads();
    if (!shared)
        return;
    for (uint64_t g = threadIdx.x; g < groups; g += blockDim.x) {
        if (kind == kHashSum) {
            rf_sum128 x = {sh[2 * g], (int64_t)sh[2 * g + 1]};
            if (x.lo || x.hi)
                add128_atomic(acc + 2 * g, x);
        } else if (kind == kHashCount) {
            if (sh[g])
                atomicAdd(&acc[g], sh[g]);
        } else if (sh[g] != init) {
            fold_one(kind, acc, g, sh[g]);
        }
    }
}

// The distinct values of a column of small integers (string ids): a flag
// per value, then the flagged values in order.
__global__ void k_mark_values(const uint64_t *col, uint64_t n, uint8_t *flags)
{
    RF_GRID_LOOP(i, n) flags[col[i]] = 1;
}

__global__ void k_flagged_values(const uint8_t *flags, const uint64_t *pos, uint64_t n, uint64_t *out)
{
    RF_GRID_LOOP(v, n)
    {
        if (flags[v])
            out[pos[v]] = v;
    }
}

// Region-major accumulators of the generated reducing gather (codegen.c):
// slot s's `width` words to group pos[s]'s place, for the slots in use.
__global__ void k_gather_slots(const uint8_t *flags, const uint64_t *pos, const unsigned long long *src,
                               uint64_t cap, int width, unsigned long long *dst)
{
    RF_GRID_LOOP(s, cap)
    {
        if (!flags[s])
            continue;
        for (int w = 0; w < width; w++)
            dst[pos[s] * width + w] = src[s * width + w];
    }
}

__global__ void k_hash_avg_finish(const unsigned long long *sums, const unsigned long long *counts, uint64_t g,
                                  int scale, uint64_t *out)
{
    RF_GRID_LOOP(s, g)
    {
        rf_sum128 v = {sums[2 * s], (int64_t)sums[2 * s + 1]};
        out[s] = rf_sops_from_f(rf_avg_exact(v, counts[s], scale));
    }
}

extern "C" {

cudaError_t rf_k_hash_groups(cudaStream_t s, rf_cols in, int nkeys, size_t n, size_t stride, uint64_t *keys,
                             unsigned *state, size_t cap, unsigned long long *claimed, unsigned *overflow,
                             uint64_t *gid)
{
    LAUNCH(k_hash_groups, n, s, in, nkeys, n, stride, keys, state, cap, claimed, overflow, gid);
}

cudaError_t rf_k_slot_flags(cudaStream_t s, const unsigned *state, size_t cap, uint8_t *flags)
{
    LAUNCH(k_slot_flags, cap, s, state, cap, flags);
}

cudaError_t rf_k_slot_groups(cudaStream_t s, const uint8_t *flags, const uint64_t *pos, const uint64_t *keys,
                             size_t cap, int nkeys, uint64_t *group_of, rf_wcols out)
{
    LAUNCH(k_slot_groups, cap, s, flags, pos, keys, cap, nkeys, group_of, out);
}

cudaError_t rf_k_renumber(cudaStream_t s, uint64_t *gid, const uint64_t *group_of, size_t n)
{
    LAUNCH(k_renumber, n, s, gid, group_of, n);
}

cudaError_t rf_k_hash_fold(cudaStream_t s, int kind, const uint64_t *vals, const uint64_t *gid, size_t n,
                           size_t groups, unsigned long long *acc)
{
    LAUNCH(k_hash_fold, n, s, kind, vals, gid, n, groups, acc);
}

cudaError_t rf_k_mark_values(cudaStream_t s, const uint64_t *col, size_t n, uint8_t *flags)
{
    LAUNCH(k_mark_values, n, s, col, n, flags);
}

cudaError_t rf_k_flagged_values(cudaStream_t s, const uint8_t *flags, const uint64_t *pos, size_t n, uint64_t *out)
{
    LAUNCH(k_flagged_values, n, s, flags, pos, n, out);
}

cudaError_t rf_k_gather_slots(cudaStream_t s, const uint8_t *flags, const uint64_t *pos,
                              const unsigned long long *src, size_t cap, int width, unsigned long long *dst)
{
    LAUNCH(k_gather_slots, cap, s, flags, pos, src, cap, width, dst);
}

cudaError_t rf_k_hash_avg_finish(cudaStream_t s, const unsigned long long *sums, const unsigned long long *counts,
                                 size_t g, int scale, uint64_t *out)
{
    LAUNCH(k_hash_avg_finish, g, s, sums, counts, g, scale, out);
}

void rf_k_load_tails(void)
{
    const void *tails[] = {(const void *)k_seg_total_finish, (const void *)k_seg_iavg_finish,
                           (const void *)k_hash_avg_finish,  (const void *)k_fill,
                           (const void *)k_slot_flags,       (const void *)k_slot_groups,
                           (const void *)k_gather_slots,     (const void *)k_scan_tail,
                           (const void *)k_hash_groups,      (const void *)k_renumber,
                           (const void *)k_hash_fold,        (const void *)k_gather_rows};
    rf_launch::load_code(tails, sizeof tails / sizeof *tails);
}

} // extern "C"
