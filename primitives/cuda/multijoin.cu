// The breadth-first leapfrog triejoin's kernels (thesis ch. 5, adapted to
// the H100): each level extends every partial binding by the values of
// the next variable that every input taking part holds.
//
// A binding's range in an input is found through a directory on the
// input's first column (two loads) rather than binary searches over the
// whole input (~2 log n dependent loads: on 10^7-edge graphs they were
// most of the time). The shortest range drives: its values are looked up
// in the others by binary search (the thesis' "unprocessed x processed"
// case, the small side searched in the large). Work is balanced by cutting
// every binding's driver range into chunks (work items), so a hub of a
// skewed graph is spread over many teams instead of stalling one, and a
// team has as many lanes (4..32) as the level's ranges are long on
// average, so low-degree graphs do not leave most of a warp idle. Counts
// first, then, after a scan, each team writes its extensions in place
// (ballot + popc give every lane its slot).
#include "multijoin.h"

#include "launch.cuh"

#include <cstdlib>
#include <cstring>

namespace {

using rf_launch::grid_for;
using rf_launch::reduce_grid_for;
using rf_launch::block_min_max;
using rf_launch::kBlock;

// The kernels compiled for a level of 1, 2 or 3 inputs (triangles' and
// 4-cliques' levels), the general one (0) for more; RF_GPU_LFTJ_GENERAL=1
// runs the general one always, for tests and measurements.
__host__ int specialised(int npart)
{
    const char *general = getenv("RF_GPU_LFTJ_GENERAL");   // (read each time: a few launches a level)
    return (general && *general == '1') || npart > 3 ? 0 : npart;
}

using rf_launch::lower_bound;
using rf_launch::upper_bound;

// The range of input x's rows that agree with binding `row` on the columns
// before the level's one, and (hub_out not NULL) its bitmap's slot
// (RF_MJ_NO_HUB: none).
__device__ __forceinline__ void range_of(const rf_mj_level &lv, int x, const rf_mj_rows &in, uint64_t row,
                                         uint64_t *lo_out, uint64_t *hi_out, uint32_t *hub_out)
{
    uint64_t lo = 0, hi = lv.nrows[x];
    if (hub_out)
        *hub_out = RF_MJ_NO_HUB;
    for (int j = 0; j < lv.col[x] && lo < hi; j++) {
        uint64_t v = in.data[(uint64_t)lv.prefix_var[x][j] * in.cap + row];
        if (j == 0 && lv.dir[x].off) {
            const rf_mj_dir &dir = lv.dir[x];
            if (v < dir.min || v - dir.min > dir.span) {
                hi = lo;
            } else {
                lo = dir.off[v - dir.min];
                hi = dir.off[v - dir.min + 1];
                if (hub_out && lv.hub[x].slot && lv.col[x] == 1)
                    *hub_out = lv.hub[x].slot[v - dir.min];
            }
            continue;
        }
        lo = lower_bound(lv.cols[x][j], lo, hi, v);
        hi = upper_bound(lv.cols[x][j], lo, hi, v);
    }
    *lo_out = lo;
    *hi_out = hi;
}

// Whether driver value v lies in every other input's range (a bit of the
// range's bitmap where it has one, else a binary search). The caller
// takes each value at its first row in the driver's range only (a later
// column of the driver repeats it).
//
// NP > 0: the level has NP inputs taking part, known when compiled, so the
// loops over them unroll and the ranges stay in registers (with NP = 0,
// any number up to RF_MULTIJOIN_MAX_IN, they live in local memory: a
// 320-byte stack frame a thread, and the triangle count's inner loop read
// them from there for every value).
//
// A range's bitmap is found from its slot (levels of two inputs test
// through member_other, which holds the other input's bitmap as a pointer
// for the item).
template <int NP>
__device__ __forceinline__ bool member(const rf_mj_level &lv, int drv, const uint64_t *lo, const uint64_t *hi,
                                       const uint32_t *hub, uint64_t v)
{
#pragma unroll
    for (int x = 0; x < (NP ? NP : lv.npart); x++) {
        if (x == drv)
            continue;
        if (lv.col[x] == 0 && lv.dir[x].off) {   // level 0: the whole first column
            const rf_mj_dir &dir = lv.dir[x];
            if (v < dir.min || v - dir.min > dir.span || dir.off[v - dir.min] == dir.off[v - dir.min + 1])
                return false;
            continue;
        }
        if (hub[x] != RF_MJ_NO_HUB) {
            const uint64_t b = v - lv.hub[x].min;   // (wraps below min: beyond the bitmap)
            if ((b >> 5) >= lv.hub[x].words)
                return false;
            const uint32_t *words = lv.hub[x].bits + (uint64_t)hub[x] * lv.hub[x].words;
            if (!((__ldg(&words[b >> 5]) >> (b & 31)) & 1u))
                return false;
            continue;
        }
        const uint64_t *col = lv.cols[x][lv.col[x]];
        uint64_t p = lower_bound(col, lo[x], hi[x], v);
        if (p >= hi[x] || col[p] != v)
            return false;
    }
    return true;
}

// Levels of two inputs (NP = 2): the range of the input that does not
// drive, its column and its bitmap (found once a work item, not for every
// value), held as scalars for the item (not as arrays over both inputs:
// fewer registers, which this pass is bound by).
struct other_range {
    int x;                   // the input
    bool whole;              // it takes part with its first column: membership by its directory
    const uint64_t *col;     // its column at the level (WIDE)
    uint64_t lo, hi;         // the binding's range in it (WIDE)
    const uint64_t *base;    // the range's first row (not WIDE)
    uint32_t n;              // its rows (not WIDE)
    const uint32_t *bits;    // its hub bitmap's words, or NULL: searched
};

// Whether v lies in the other input's range where no search is needed:
// the range is the whole first column (its directory says) or has a hub
// bitmap. Only for such ranges.
__device__ __forceinline__ bool member_other_direct(const rf_mj_level &lv, const other_range &o, uint64_t v)
{
    if (o.whole) {
        const rf_mj_dir &dir = lv.dir[o.x];
        return !(v < dir.min || v - dir.min > dir.span || dir.off[v - dir.min] == dir.off[v - dir.min + 1]);
    }
    const uint64_t b = v - lv.hub[o.x].min;   // (wraps below min: beyond the bitmap)
    return (b >> 5) < lv.hub[o.x].words && ((__ldg(&o.bits[b >> 5]) >> (b & 31)) & 1u);
}

// Whether v lies in the other input's range [lo, hi) (member() for NP = 2;
// WIDE: row numbers of 64 bits).
__device__ __forceinline__ bool member_other(const rf_mj_level &lv, const other_range &o, uint64_t lo, uint64_t hi,
                                             uint64_t v)
{
    if (o.whole || o.bits)
        return member_other_direct(lv, o, v);
    const uint64_t p = lower_bound(o.col, lo, hi, v);
    return p < hi && o.col[p] == v;
}

// How many of the team's G pivots (lane k's pv, in order) are less than v,
// by shuffles (a binary search over the lanes).
template <int G>
__device__ __forceinline__ int pivots_below(uint64_t pv, uint64_t v, unsigned tmask)
{
    int c = 0;   // (a prefix: the pivots are sorted)
#pragma unroll
    for (int s = G / 2; s >= 1; s >>= 1)
        if (__shfl_sync(tmask, pv, c + s - 1, G) < v)
            c += s;
    if (__shfl_sync(tmask, pv, c, G) < v)
        c++;
    return c;
}

// Narrows a searched range [*lo, *hi) of n >= G + 1 rows before each lane's
// binary search for its v: the team's G lanes load G pivots spread evenly
// over it (independent loads: one round trip), and each lane finds among
// them, by shuffles, the stretch that holds its value's lower bound, a
// (G + 1)-th of the range, so its search takes log2(G + 1) fewer dependent
// loads. (R-MAT 20's triangles in the second variable order: a third of
// the tested values are searched, in ranges of up to 512 rows.) Every lane
// of the team calls it. The narrowed range holds v's lower bound in the
// whole one and the row holding v where there is one.
template <int G>
__device__ __forceinline__ void narrow(const uint64_t *col, uint64_t *lo, uint64_t *hi, uint64_t v, unsigned tmask,
                                       int tlane)
{
    const uint64_t L = *lo, n = *hi - L;
    // pivot k (lane k's) at row L + (k + 1) n / (G + 1), k < G: rows in order
    const int c = pivots_below<G>(col[L + ((uint64_t)(tlane + 1) * n) / (G + 1)], v, tmask);
    // pivot c - 1 < v <= pivot c: the bound lies after the one, at the other at the latest
    if (c > 0)
        *lo = L + ((uint64_t)c * n) / (G + 1) + 1;
    if (c < G)
        *hi = L + ((uint64_t)(c + 1) * n) / (G + 1) + 1;
}

// member_other over rows a .. b - 1 of the range (offsets from o.base, of
// 32 bits: what ptxas makes of the 64-bit search was most of a searched
// value's instructions). The search finds the range's last row not greater
// than v in log2(b - a) steps of one load and one select, with no branch
// on the loaded value, then compares that row with v.
__device__ __forceinline__ bool member_other32(const rf_mj_level &lv, const other_range &o, uint32_t a, uint32_t b,
                                               uint64_t v)
{
    if (o.whole || o.bits)
        return member_other_direct(lv, o, v);
    uint32_t n = b - a;
    if (n == 0)
        return false;
    const uint64_t *p = o.base + a;
    while (n > 1) {   // the answer lies in p[0 .. n - 1]
        const uint32_t half = n >> 1;
        p = p[half] <= v ? p + half : p;
        n -= half;
    }
    return *p == v;
}

// narrow<G> in offsets of 32 bits from the range's first row, for ranges of
// fewer than 2^26 rows (so that (G + 1) times one fits 32 bits).
template <int G>
__device__ __forceinline__ void narrow32(const uint64_t *base, uint32_t n, uint32_t *a, uint32_t *b, uint64_t v,
                                         unsigned tmask, int tlane)
{
    const unsigned c = (unsigned)pivots_below<G>(base[((uint32_t)(tlane + 1) * n) / (G + 1)], v, tmask);
    if (c > 0)
        *a = (c * n) / (G + 1) + 1;
    if (c < G)
        *b = ((c + 1) * n) / (G + 1) + 1;
}

__global__ void k_first(rf_mj_level lv, int drv, uint8_t *flags)
{
    uint64_t lo[RF_MULTIJOIN_MAX_IN], hi[RF_MULTIJOIN_MAX_IN];
    uint32_t hub[RF_MULTIJOIN_MAX_IN];
    for (int x = 0; x < lv.npart; x++) {
        lo[x] = 0;
        hi[x] = lv.nrows[x];
        hub[x] = RF_MJ_NO_HUB;
    }
    const uint64_t *dcol = lv.cols[drv][0];
    for (uint64_t j = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; j < lv.nrows[drv];
         j += (uint64_t)gridDim.x * blockDim.x) {
        const uint64_t v = dcol[j];
        // (a value's first row only: the driver's next column repeats it)
        flags[j] = !(j > 0 && dcol[j - 1] == v) && member<0>(lv, drv, lo, hi, hub, v);
    }
}

__global__ void k_first_write(rf_mj_level lv, int drv, const uint8_t *flags, const uint64_t *pos, uint64_t *out)
{
    const uint64_t *dcol = lv.cols[drv][0];
    for (uint64_t j = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; j < lv.nrows[drv];
         j += (uint64_t)gridDim.x * blockDim.x)
        if (flags[j])
            out[pos[j]] = dcol[j];
}

// The n (<= 32) match bits from bit b on, the first in bit 0. (The bitmap
// has a word more than its bits need.)
__device__ __forceinline__ unsigned match_bits(const uint32_t *bits, uint64_t b, unsigned n)
{
    const unsigned s = (unsigned)(b & 31);
    uint64_t x = bits[b >> 5];
    if (s + n > 32)
        x |= (uint64_t)bits[(b >> 5) + 1] << 32;
    const unsigned m = (unsigned)(x >> s);
    return n < 32 ? m & ((1u << n) - 1u) : m;
}

// Every input's range for binding `row` (and bitmap slot, hub not NULL),
// and the shortest (the driver, its range [*dlo, *dhi)); false when one is
// empty.
// (No array is indexed by a value known only when run: with NP > 0 they
// stay in registers.)
template <int NP>
__device__ __forceinline__ bool ranges_of(const rf_mj_level &lv, const rf_mj_rows &in, uint64_t row,
                                          uint64_t *lo, uint64_t *hi, uint32_t *hub, int *drv_out,
                                          uint64_t *dlo, uint64_t *dhi)
{
    int drv = 0;
    uint64_t best = ~0ull;
#pragma unroll
    for (int x = 0; x < (NP ? NP : lv.npart); x++) {
        range_of(lv, x, in, row, &lo[x], &hi[x], hub ? &hub[x] : nullptr);
        if (lo[x] >= hi[x])
            return false;
        if (hi[x] - lo[x] < best) {
            best = hi[x] - lo[x];
            drv = x;
            *dlo = lo[x];
            *dhi = hi[x];
        }
    }
    *drv_out = drv;
    return true;
}

__global__ void k_directory(const uint64_t *col, uint64_t n, uint64_t min, uint64_t span, uint32_t *off)
{
    // Row i (and the end, i = n) owns the directory entries of the values
    // after row i - 1's up to its own: each entry is written once.
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i <= n;
         i += (uint64_t)gridDim.x * blockDim.x) {
        uint64_t first = i == 0 ? 0 : col[i - 1] - min + 1;
        uint64_t last = i == n ? span + 1 : col[i] - min;
        for (uint64_t e = first; e <= last && e <= span + 1; e++)
            off[e] = (uint32_t)i;
    }
}

__global__ void k_hub_stats(const uint64_t *col, uint64_t n, const uint32_t *off, uint64_t span, uint64_t *out)
{
    __shared__ unsigned long long s_hist[64];
    for (int k = threadIdx.x; k < 64; k += blockDim.x)
        s_hist[k] = 0;
    __syncthreads();
    unsigned long long lo = ~0ull, hi = 0;
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const uint64_t v = col[i];
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i <= span; i += stride) {
        const uint32_t len = off[i + 1] - off[i];
        if (len)
            atomicAdd(&s_hist[31 - __clz(len)], 1ull);
    }
    block_min_max(lo, hi);   // (and the histogram's atomics done: its barriers)
    if (threadIdx.x == 0) {
        atomicMin((unsigned long long *)&out[0], lo);
        atomicMax((unsigned long long *)&out[1], hi);
    }
    for (int k = threadIdx.x; k < 64; k += blockDim.x)
        if (s_hist[k])
            atomicAdd((unsigned long long *)&out[2 + k], s_hist[k]);
}

__global__ void k_hub_flags(const uint32_t *off, uint64_t span, uint64_t least, uint8_t *flags)
{
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i <= span;
         i += (uint64_t)gridDim.x * blockDim.x)
        flags[i] = off[i + 1] - off[i] >= least;
}

__global__ void k_hub_slots(const uint8_t *flags, const uint64_t *pos, uint64_t span, uint32_t *slot)
{
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i <= span;
         i += (uint64_t)gridDim.x * blockDim.x)
        slot[i] = flags[i] ? (uint32_t)pos[i] : RF_MJ_NO_HUB;
}

__global__ void k_hub_fill(const uint64_t *col0, const uint64_t *col1, uint64_t n, uint64_t dir_min, rf_mj_hubs h,
                           uint32_t *bits)
{
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x) {
        const uint32_t s = h.slot[col0[i] - dir_min];
        if (s == RF_MJ_NO_HUB)
            continue;
        const uint64_t b = col1[i] - h.min;
        atomicOr(&bits[(uint64_t)s * h.words + (b >> 5)], 1u << (b & 31));
    }
}

template <int NP>
__global__ void k_driver_len(rf_mj_level lv, rf_mj_rows in, uint64_t *len)
{
    for (uint64_t row = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; row < in.n;
         row += (uint64_t)gridDim.x * blockDim.x) {
        uint64_t lo[NP ? NP : RF_MULTIJOIN_MAX_IN], hi[NP ? NP : RF_MULTIJOIN_MAX_IN];
        uint64_t dlo = 0, dhi = 0;
        int drv;
        len[row] = ranges_of<NP>(lv, in, row, lo, hi, nullptr, &drv, &dlo, &dhi) ? dhi - dlo : 0;
    }
}

__global__ void k_chunks(uint64_t *len, uint64_t n, uint64_t chunk)
{
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x)
        len[i] = (len[i] + chunk - 1) / chunk;
}

__global__ void k_items(const uint64_t *istart, uint64_t n, uint64_t *item_row)
{
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x)
        for (uint64_t k = istart[i]; k < istart[i + 1]; k++)
            item_row[k] = i;
}

// A team of G lanes a work item (grid-stride over items). With `write`,
// the extensions go to out from out_pos[item]; else their number to
// counts[item]. A team's lanes run the same trips, so a ballot over the
// team's mask is convergent. MODE (levels of two inputs): LV_WIDE, the
// other input's range searched with row numbers of 64 bits, for inputs of
// 2^32 rows or more (and RF_GPU_LFTJ_SEARCH=wide, to measure); LV_PAIRS, a
// count alone (no match bits, no repeated values: a counted last level),
// two values a lane a trip (an instance of its own: its registers would
// cost the other paths spills).
enum { LV_NARROW = 0, LV_WIDE = 1, LV_PAIRS = 2 };
template <int G, bool write, int NP, int MINB, int MODE = LV_NARROW>
__global__ void __launch_bounds__(kBlock, MINB) k_level(rf_mj_level lv, rf_mj_rows in, rf_mj_items items, uint64_t *counts,
                        const uint64_t *out_pos, uint64_t *out, uint64_t out_cap)
{
    const int lane = threadIdx.x & 31;
    const int tlane = lane & (G - 1);
    const unsigned tmask = G == 32 ? 0xffffffffu : ((1u << G) - 1u) << (lane & ~(G - 1));
    const uint64_t team = ((uint64_t)blockIdx.x * blockDim.x + threadIdx.x) / G;
    const uint64_t nteams = ((uint64_t)gridDim.x * blockDim.x) / G;
    for (uint64_t it = team; it < items.n; it += nteams) {
        const uint64_t row = items.row[it];
        const uint64_t chunk = it - items.istart[row];
        uint64_t lo[NP ? NP : RF_MULTIJOIN_MAX_IN], hi[NP ? NP : RF_MULTIJOIN_MAX_IN];
        uint32_t hub[NP ? NP : RF_MULTIJOIN_MAX_IN];
        uint64_t dlo = 0, dhi = 0;
        int drv = 0;
        uint32_t found = 0;   // (a chunk's: fewer than 2^32)
        const uint64_t base = write ? out_pos[it] : 0;
        constexpr bool WIDE = MODE == LV_WIDE;
        if (ranges_of<NP>(lv, in, row, lo, hi, hub, &drv, &dlo, &dhi)) {
            const uint64_t *dcol = lv.cols[drv][lv.col[drv]];
            const bool repeats = !lv.distinct[drv];
            // NP = 2: the other input, and whether its searches are narrowed first
            other_range o{};
            bool pivots = false;
            if (NP == 2) {
                const int ox = drv == 0 ? 1 : 0;
                o.x = ox;
                o.whole = lv.col[ox] == 0 && lv.dir[ox].off;
                const uint64_t olo = drv == 0 ? lo[NP - 1] : lo[0];
                const uint64_t ohi = drv == 0 ? hi[NP - 1] : hi[0];
                if (WIDE) {
                    o.col = lv.cols[ox][lv.col[ox]];
                    o.lo = olo;
                    o.hi = ohi;
                } else {
                    o.base = lv.cols[ox][lv.col[ox]] + olo;
                    o.n = (uint32_t)(ohi - olo);
                }
                const uint32_t oslot = drv == 0 ? hub[NP - 1] : hub[0];
                o.bits = oslot != RF_MJ_NO_HUB ? lv.hub[ox].bits + (uint64_t)oslot * lv.hub[ox].words : nullptr;
                pivots = items.pivots && !o.bits && !o.whole && ohi - olo >= items.pivots && ohi - olo > G &&
                         (WIDE || ohi - olo < (1u << 26));
            }
            const uint64_t cbeg = dlo + chunk * items.chunk;
            const uint64_t cend = cbeg + items.chunk < dhi ? cbeg + items.chunk : dhi;
            const uint64_t bit0 = items.bits ? items.doff[row] - dlo : 0;   // bit of driver row j: bit0 + j
            if (write && items.bits) {
                // From the count's match bits: each lane takes `per`
                // consecutive driver rows of the chunk, counts its matches,
                // the team scans the counts, and each lane writes its
                // matches in order from its offset, visiting only them
                // (R-MAT's triangles: a tenth of the driver rows match).
                const uint64_t per = (cend - cbeg + G - 1) / G;
                const uint64_t p0 = cbeg + (uint64_t)tlane * per;
                const uint64_t p1 = p0 + per < cend ? p0 + per : cend;
                uint64_t mine = 0;
                for (uint64_t p = p0; p < p1; p += 32)
                    mine += __popc(match_bits(items.bits, bit0 + p, p1 - p < 32 ? (unsigned)(p1 - p) : 32u));
                uint64_t before = mine;   // inclusive, then exclusive
                for (int o = 1; o < G; o <<= 1) {
                    const uint64_t y = __shfl_up_sync(tmask, before, o, G);
                    if (tlane >= o)
                        before += y;
                }
                uint64_t at = base + before - mine;
                for (uint64_t p = p0; p < p1; p += 32) {
                    unsigned m = match_bits(items.bits, bit0 + p, p1 - p < 32 ? (unsigned)(p1 - p) : 32u);
                    while (m) {
                        const uint64_t j = p + (uint64_t)(__ffs(m) - 1);
                        m &= m - 1;
                        for (int c = 0; c < lv.d; c++)
                            out[(uint64_t)c * out_cap + at] = in.data[(uint64_t)c * in.cap + row];
                        out[(uint64_t)lv.d * out_cap + at] = dcol[j];
                        at++;
                    }
                }
                continue;
            }
            // (rows of the chunk numbered from its first, in 32 bits: fewer
            // registers and instructions a value)
            const uint64_t *dp = dcol + cbeg;
            const uint32_t cn = (uint32_t)(cend - cbeg);
            const uint64_t bbase = bit0 + cbeg;   // the chunk's first driver row's match bit
            const bool at_range_start = cbeg == dlo;
            if constexpr (NP == 2 && MODE == LV_PAIRS && !write) {
                // A count alone (a counted last level: no match bits, no
                // repeated values; launch_level launches this instance only
                // so, and the rest of the body is not compiled into it), two
                // driver values a lane a trip, their loads and tests
                // independent; each lane counts its own matches and the team
                // sums them once at the end (no ballot a value). The
                // triangle count's level 2.
                uint32_t mine = 0;
                for (uint32_t j0 = 0; j0 < cn; j0 += 2 * G) {
                    const uint32_t ja = j0 + tlane, jb = ja + G;
                    const uint64_t va = ja < cn ? dp[ja] : 0, vb = jb < cn ? dp[jb] : 0;
                    uint32_t a0 = 0, b0 = o.n, a1 = 0, b1 = o.n;
                    if (pivots) {   // (the item's: the team agrees)
                        narrow32<G>(o.base, o.n, &a0, &b0, va, tmask, tlane);
                        if (j0 + G < cn)   // (the team agrees)
                            narrow32<G>(o.base, o.n, &a1, &b1, vb, tmask, tlane);
                    }
                    mine += (ja < cn && member_other32(lv, o, a0, b0, va)) + (jb < cn && member_other32(lv, o, a1, b1, vb));
                }
#pragma unroll
                for (int s = G / 2; s >= 1; s >>= 1)
                    mine += __shfl_xor_sync(tmask, mine, s, G);
                if (tlane == 0)
                    counts[it] = mine;
                continue;
            } else {
                for (uint32_t j0 = 0; j0 < cn; j0 += G) {
                    const uint32_t j = j0 + tlane;
                    bool ok = false;
                    uint64_t v = 0;
                    if (j < cn) {
                        if (write && items.bits) {
                            const uint64_t b = bbase + j;
                            ok = (items.bits[b >> 5] >> (b & 31)) & 1u;
                            if (ok)
                                v = dp[j];
                        } else {
                            v = dp[j];
                        }
                    }
                    if (!(write && items.bits)) {
                        // A value counts at its first row in the driver's range
                        // (a later column of the driver repeats it): the row
                        // before is the previous lane's value, loaded already.
                        // Not where the column is the driver's last (its values
                        // in the range are distinct: triangles' every level).
                        bool first = j < cn;
                        if (repeats) {   // (the item's: the team agrees)
                            const bool after_start = j > 0 || !at_range_start;   // a row before it in the range
                            uint64_t prev = __shfl_up_sync(tmask, v, 1, G);
                            if (tlane == 0 && j < cn && after_start)
                                prev = dp[(int64_t)j - 1];
                            first = first && !(after_start && prev == v);
                        }
                        if (NP == 2 && WIDE) {
                            uint64_t slo = o.lo, shi = o.hi;
                            if (pivots)   // (the item's: the team agrees)
                                narrow<G>(o.col, &slo, &shi, v, tmask, tlane);
                            ok = first && member_other(lv, o, slo, shi, v);
                        } else if (NP == 2) {
                            uint32_t a = 0, b = o.n;
                            if (pivots)   // (the item's: the team agrees)
                                narrow32<G>(o.base, o.n, &a, &b, v, tmask, tlane);
                            ok = first && member_other32(lv, o, a, b, v);
                        } else {
                            ok = first && member<NP>(lv, drv, lo, hi, hub, v);
                        }
                    }
                    const unsigned ballot = __ballot_sync(tmask, ok);
                    if (!write && items.bits && tlane == 0 && ballot) {
                        // the team's G bits, for driver rows j0 .. j0 + G - 1
                        const unsigned mine = G == 32 ? ballot : (ballot >> (lane & ~(G - 1))) & ((1u << G) - 1u);
                        const uint64_t b = bbase + j0;
                        const unsigned off = (unsigned)(b & 31);
                        atomicOr(&items.bits[b >> 5], mine << off);
                        if (off + G > 32)
                            atomicOr(&items.bits[(b >> 5) + 1], mine >> (32 - off));
                    }
                    if (write && ok) {
                        const uint64_t at = base + found + __popc(ballot & ((1u << lane) - 1u));
                        for (int c = 0; c < lv.d; c++)
                            out[(uint64_t)c * out_cap + at] = in.data[(uint64_t)c * in.cap + row];
                        out[(uint64_t)lv.d * out_cap + at] = v;
                    }
                    found += __popc(ballot);
                }
            }
        }
        if (!write && tlane == 0)
            counts[it] = found;
    }
}

// Blocks a multiprocessor must hold at once (__launch_bounds__), which
// caps the registers a thread: the counting and writing passes are bound by
// how many warps hide their loads' latency. Measured (H200, R-MAT 20's
// triangle count, 2026-12-02): the two-input count at 46 registers (5
// blocks) 16.1 ms, held to 40 (6 blocks) 13.8 ms, to 32 (8 blocks; 76
// bytes spilled) 12.6 ms; the two-input write 11.3 -> 9.0 ms at 6 blocks.
// Levels of three or more inputs keep the compiler's choice: held to 40 or
// 32 they spill 80-128 bytes, and they were not measured so.
template <bool write, int NP>
constexpr int level_min_blocks()
{
    return NP == 1 || NP == 2 ? (write ? 6 : 8) : 1;
}

template <bool write, int NP, int MODE = LV_NARROW>
void launch_level_np(cudaStream_t s, unsigned grid, const rf_mj_level *lv, rf_mj_rows in, rf_mj_items items,
                     uint64_t *counts, const uint64_t *out_pos, uint64_t *out, uint64_t out_cap)
{
    constexpr int B = level_min_blocks<write, NP>();
    switch (items.team) {
    case 4: k_level<4, write, NP, B, MODE><<<grid, kBlock, 0, s>>>(*lv, in, items, counts, out_pos, out, out_cap); break;
    case 8: k_level<8, write, NP, B, MODE><<<grid, kBlock, 0, s>>>(*lv, in, items, counts, out_pos, out, out_cap); break;
    case 16:
        k_level<16, write, NP, B, MODE><<<grid, kBlock, 0, s>>>(*lv, in, items, counts, out_pos, out, out_cap);
        break;
    default:
        k_level<32, write, NP, B, MODE><<<grid, kBlock, 0, s>>>(*lv, in, items, counts, out_pos, out, out_cap);
        break;
    }
}

// Whether a level of two inputs searches with 64-bit row numbers: an input
// of 2^32 rows or more, or asked (RF_GPU_LFTJ_SEARCH=wide).
__host__ bool wide_search(const rf_mj_level *lv)
{
    const char *search = getenv("RF_GPU_LFTJ_SEARCH");
    if (search && strcmp(search, "wide") == 0)
        return true;
    for (int x = 0; x < lv->npart; x++)
        if (lv->nrows[x] > UINT32_MAX)
            return true;
    return false;
}

template <bool write>
cudaError_t launch_level(cudaStream_t s, const rf_mj_level *lv, rf_mj_rows in, rf_mj_items items, uint64_t *counts,
                         const uint64_t *out_pos, uint64_t *out, uint64_t out_cap)
{
    if (items.n == 0)
        return cudaSuccess;
    const unsigned grid = grid_for(items.n * (uint64_t)items.team);
    switch (specialised(lv->npart)) {
    case 1: launch_level_np<write, 1>(s, grid, lv, in, items, counts, out_pos, out, out_cap); break;
    case 2:
        if (wide_search(lv))
            launch_level_np<write, 2, LV_WIDE>(s, grid, lv, in, items, counts, out_pos, out, out_cap);
        else if (!write && !items.bits && items.unroll && lv->distinct[0] && lv->distinct[1])
            launch_level_np<false, 2, LV_PAIRS>(s, grid, lv, in, items, counts, out_pos, out, out_cap);
        else
            launch_level_np<write, 2>(s, grid, lv, in, items, counts, out_pos, out, out_cap);
        break;
    case 3: launch_level_np<write, 3>(s, grid, lv, in, items, counts, out_pos, out, out_cap); break;
    default: launch_level_np<write, 0>(s, grid, lv, in, items, counts, out_pos, out, out_cap); break;
    }
    return cudaGetLastError();
}

}  // namespace

extern "C" cudaError_t rf_k_mj_first(cudaStream_t s, const rf_mj_level *lv, int drv, uint8_t *flags)
{
    k_first<<<grid_for(lv->nrows[drv]), kBlock, 0, s>>>(*lv, drv, flags);
    return cudaGetLastError();
}

extern "C" cudaError_t rf_k_mj_first_write(cudaStream_t s, const rf_mj_level *lv, int drv, const uint8_t *flags,
                                           const uint64_t *pos, uint64_t *out)
{
    k_first_write<<<grid_for(lv->nrows[drv]), kBlock, 0, s>>>(*lv, drv, flags, pos, out);
    return cudaGetLastError();
}

extern "C" cudaError_t rf_k_mj_directory(cudaStream_t s, const uint64_t *col, uint64_t n, uint64_t min,
                                         uint64_t span, uint32_t *off)
{
    k_directory<<<grid_for(n + 1), kBlock, 0, s>>>(col, n, min, span, off);
    return cudaGetLastError();
}

extern "C" cudaError_t rf_k_mj_hub_stats(cudaStream_t s, const uint64_t *col, uint64_t n, const uint32_t *off,
                                         uint64_t span, uint64_t *out)
{
    const uint64_t most = n > span + 1 ? n : span + 1;
    k_hub_stats<<<reduce_grid_for(most), kBlock, 0, s>>>(col, n, off, span, out);
    return cudaGetLastError();
}

extern "C" cudaError_t rf_k_mj_hub_flags(cudaStream_t s, const uint32_t *off, uint64_t span, uint64_t least,
                                         uint8_t *flags)
{
    k_hub_flags<<<grid_for(span + 1), kBlock, 0, s>>>(off, span, least, flags);
    return cudaGetLastError();
}

extern "C" cudaError_t rf_k_mj_hub_slots(cudaStream_t s, const uint8_t *flags, const uint64_t *pos, uint64_t span,
                                         uint32_t *slot)
{
    k_hub_slots<<<grid_for(span + 1), kBlock, 0, s>>>(flags, pos, span, slot);
    return cudaGetLastError();
}

extern "C" cudaError_t rf_k_mj_hub_fill(cudaStream_t s, const uint64_t *col0, const uint64_t *col1, uint64_t n,
                                        uint64_t dir_min, const rf_mj_hubs *h, uint32_t *bits)
{
    if (n == 0)
        return cudaSuccess;
    k_hub_fill<<<grid_for(n), kBlock, 0, s>>>(col0, col1, n, dir_min, *h, bits);
    return cudaGetLastError();
}

extern "C" cudaError_t rf_k_mj_driver_len(cudaStream_t s, const rf_mj_level *lv, rf_mj_rows in, uint64_t *len)
{
    if (in.n == 0)
        return cudaSuccess;
    switch (specialised(lv->npart)) {
    case 1: k_driver_len<1><<<grid_for(in.n), kBlock, 0, s>>>(*lv, in, len); break;
    case 2: k_driver_len<2><<<grid_for(in.n), kBlock, 0, s>>>(*lv, in, len); break;
    case 3: k_driver_len<3><<<grid_for(in.n), kBlock, 0, s>>>(*lv, in, len); break;
    default: k_driver_len<0><<<grid_for(in.n), kBlock, 0, s>>>(*lv, in, len); break;
    }
    return cudaGetLastError();
}

extern "C" cudaError_t rf_k_mj_chunks(cudaStream_t s, uint64_t *len, uint64_t n, uint64_t chunk)
{
    if (n == 0)
        return cudaSuccess;
    k_chunks<<<grid_for(n), kBlock, 0, s>>>(len, n, chunk);
    return cudaGetLastError();
}

extern "C" cudaError_t rf_k_mj_items(cudaStream_t s, const uint64_t *istart, uint64_t n, uint64_t *item_row)
{
    if (n == 0)
        return cudaSuccess;
    k_items<<<grid_for(n), kBlock, 0, s>>>(istart, n, item_row);
    return cudaGetLastError();
}

extern "C" cudaError_t rf_k_mj_count(cudaStream_t s, const rf_mj_level *lv, rf_mj_rows in, rf_mj_items items,
                                     uint64_t *counts)
{
    return launch_level<false>(s, lv, in, items, counts, nullptr, nullptr, 0);
}

extern "C" cudaError_t rf_k_mj_write(cudaStream_t s, const rf_mj_level *lv, rf_mj_rows in, rf_mj_items items,
                                     const uint64_t *out_pos, uint64_t *out, uint64_t out_cap)
{
    return launch_level<true>(s, lv, in, items, nullptr, out_pos, out, out_cap);
}

extern "C" void rf_k_mj_load(void)
{
    const void *fns[] = {(const void *)k_first,          (const void *)k_first_write,
                         (const void *)k_directory,      (const void *)k_hub_stats,
                         (const void *)k_hub_flags,      (const void *)k_hub_slots,
                         (const void *)k_hub_fill,       (const void *)k_driver_len<0>,
                         (const void *)k_driver_len<1>,  (const void *)k_driver_len<2>,
                         (const void *)k_driver_len<3>,  (const void *)k_chunks,
                         (const void *)k_items,
#define RF_MJ_COUNT(G, NP) (const void *)k_level<G, false, NP, level_min_blocks<false, NP>()>
#define RF_MJ_WRITE(G, NP) (const void *)k_level<G, true, NP, level_min_blocks<true, NP>()>
#define RF_MJ_LEVELS(NP)                                                                                    \
    RF_MJ_COUNT(4, NP), RF_MJ_COUNT(8, NP), RF_MJ_COUNT(16, NP), RF_MJ_COUNT(32, NP), RF_MJ_WRITE(4, NP),   \
        RF_MJ_WRITE(8, NP), RF_MJ_WRITE(16, NP), RF_MJ_WRITE(32, NP)
                         RF_MJ_LEVELS(0), RF_MJ_LEVELS(1), RF_MJ_LEVELS(2), RF_MJ_LEVELS(3),
#define RF_MJ_WIDE(G) (const void *)k_level<G, false, 2, level_min_blocks<false, 2>(), LV_WIDE>, \
                      (const void *)k_level<G, true, 2, level_min_blocks<true, 2>(), LV_WIDE>, \
                      (const void *)k_level<G, false, 2, level_min_blocks<false, 2>(), LV_PAIRS>
                         RF_MJ_WIDE(4), RF_MJ_WIDE(8), RF_MJ_WIDE(16), RF_MJ_WIDE(32)
#undef RF_MJ_WIDE
#undef RF_MJ_LEVELS
#undef RF_MJ_WRITE
#undef RF_MJ_COUNT
    };
    rf_launch::load_code(fns, sizeof fns / sizeof *fns);
}
