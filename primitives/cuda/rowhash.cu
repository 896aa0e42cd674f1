// --count's fingerprint of a relation's rows where they are (runtime.c,
// answer_hash: the rows cut into blocks of block_rows, each block hashed as
// one chain over its rows' words from seed), for relations whose output
// order is their word order and that hold no strings: only the block
// hashes cross to the host, not the rows. A thread a block; each thread
// walks its block in row order (the chain is sequential by definition),
// reading ahead so that loads overlap the multiplications.
#include "cuda_internal.h"

#include <stdlib.h>

#include "launch.cuh"

namespace {

__device__ __forceinline__ uint64_t mix64(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 31);
}

__global__ void k_block_hashes(rf_cols cols, int arity, uint64_t n, uint64_t block_rows, uint64_t nblocks,
                               uint64_t seed, uint64_t *out)
{
    RF_GRID_LOOP(b, nblocks) {
        uint64_t lo = b * block_rows, hi = lo + block_rows < n ? lo + block_rows : n;
        uint64_t h = seed;
        for (uint64_t i = lo; i < hi; i++)
            for (int c = 0; c < arity; c++)
                h = mix64(h, __ldg(cols.c[c] + i));
        out[b] = h;
    }
}

// The same hashes, a warp for 32 blocks (a lane's chain each) with the rows
// brought in through shared memory: for each tile of 32 rows of every
// block of the warp, the warp loads the tile of block j (j = 0..31) with
// its lanes on consecutive rows, so the loads are whole cache lines, where
// a thread walking its own block alone touches a line 512 KB away from its
// neighbours' at every step. tile[c][j][r]: column c, block j, row r
// (padded to 33 so that the lanes reading block j's rows in turn hit 32
// different banks).
constexpr int kTile = 32;

__global__ void k_block_hashes_tiled(rf_cols cols, int arity, uint64_t n, uint64_t block_rows, uint64_t nblocks,
                                     uint64_t seed, uint64_t *out)
{
    extern __shared__ uint64_t tile[];   // arity x 32 x (kTile + 1)
    int lane = threadIdx.x;
    uint64_t first = (uint64_t)blockIdx.x * 32;   // the warp's first block
    uint64_t mine = first + lane;
    uint64_t h = seed;
    for (uint64_t r0 = 0; r0 < block_rows; r0 += kTile) {
        for (int c = 0; c < arity; c++)
#pragma unroll 8
            for (int j = 0; j < 32; j++) {
                uint64_t b = first + j, row = b * block_rows + r0 + lane;
                bool in = b < nblocks && r0 + lane < block_rows && row < n;
                tile[((size_t)c * 32 + j) * (kTile + 1) + lane] = in ? __ldg(cols.c[c] + row) : 0;
            }
        __syncwarp();
        if (mine < nblocks) {
            uint64_t lo = mine * block_rows + r0, end = (mine + 1) * block_rows < n ? (mine + 1) * block_rows : n;
            int rows = lo >= end ? 0 : (end - lo < (uint64_t)kTile ? (int)(end - lo) : kTile);
            for (int r = 0; r < rows; r++)
                for (int c = 0; c < arity; c++)
                    h = mix64(h, tile[((size_t)c * 32 + lane) * (kTile + 1) + r]);
        }
        __syncwarp();
        if (first * block_rows + r0 + kTile >= n)
            break;   // every block of the warp is past the last row
    }
    if (mine < nblocks)
        out[mine] = h;
}

// Columns the tiled kernel takes (its tile is 8.4 KB a column).
constexpr int kTiledMaxCols = 4;

}  // namespace

extern "C" bool rf_cuda_block_hashes(rf_cuda_ctx *c, const rf_drel *r, size_t block_rows, uint64_t seed,
                                     uint64_t *hashes, rf_status *st)
{
    uint64_t nblocks = r->nrows ? (r->nrows + block_rows - 1) / block_rows : 0;
    if (nblocks == 0)
        return true;
    uint64_t *dev = (uint64_t *)rf_cuda_alloc(c, nblocks * sizeof *dev, "--count's hash", st);
    if (!dev)
        return false;
    // RF_CUDA_HASH_TILED=0: a thread a block reading its rows directly
    // (the comparison; also every relation of more than 4 columns).
    const char *tiled_env = getenv("RF_CUDA_HASH_TILED");
    bool tiled = r->arity <= kTiledMaxCols && !(tiled_env && tiled_env[0] == '0');
    if (tiled) {
        unsigned grid = (unsigned)((nblocks + 31) / 32);
        size_t shared = (size_t)r->arity * 32 * (kTile + 1) * sizeof(uint64_t);
        k_block_hashes_tiled<<<grid, 32, shared, c->stream>>>(rf_cols_of(r), r->arity, r->nrows, block_rows,
                                                             nblocks, seed, dev);
    } else {
        // Small blocks of threads: a few thousand chains spread over every SM.
        unsigned threads = 64, grid = (unsigned)((nblocks + threads - 1) / threads);
        k_block_hashes<<<grid, threads, 0, c->stream>>>(rf_cols_of(r), r->arity, r->nrows, block_rows, nblocks,
                                                         seed, dev);
    }
    bool ok = rf_cuda_check(c, cudaGetLastError(), "--count's hash", st) &&
              rf_cuda_read_back(c, dev, hashes, nblocks * sizeof *hashes, st);
    rf_cuda_free(c, dev, nblocks * sizeof *dev);
    return ok;
}
