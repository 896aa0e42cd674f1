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
    // Small blocks of threads: a few thousand chains spread over every SM.
    unsigned threads = 64, grid = (unsigned)((nblocks + threads - 1) / threads);
    k_block_hashes<<<grid, threads, 0, c->stream>>>(rf_cols_of(r), r->arity, r->nrows, block_rows, nblocks, seed,
                                                     dev);
    bool ok = rf_cuda_check(c, cudaGetLastError(), "--count's hash", st) &&
              rf_cuda_read_back(c, dev, hashes, nblocks * sizeof *hashes, st);
    rf_cuda_free(c, dev, nblocks * sizeof *dev);
    return ok;
}
