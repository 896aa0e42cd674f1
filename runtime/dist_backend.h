/* The distribution layer: a backend that runs a program over every rank of
 * a communicator, each rank holding a part of every relation and running
 * the kernels of the inner backend on its parts (dist_backend.c; the
 * design in docs/design.md, "Distribution"; use in docs/distributed.md). */
#ifndef RF_DIST_BACKEND_H
#define RF_DIST_BACKEND_H

#include "backend.h"
#include "dist_comm.h"

/* Takes over inner (destroyed with the result); comm stays the caller's
 * (close it after destroying the backend). */
rf_backend *rf_backend_dist_new(rf_backend *inner, rf_comm *comm);
/* Host threads rank 0 uses once the outputs are gathered to it (the
 * other ranks are done then; 0: one per core): the CLI sets it when the
 * ranks share a host's cores only because no --threads was given. */
void rf_backend_dist_set_output_threads(rf_backend *be, int threads);

/* The pieces the layer is made of, exposed for tests/runtime/test_dist.c. */

/* The rank (0..size-1) that row `row` of t belongs to when hashed on its
 * first nkeys columns; string columns (types[c] == RF_TYPE_STRING; types
 * may be NULL: none) hash by their text, so every rank agrees. */
int rf_dist_row_rank(const rf_table *t, size_t row, int nkeys, const rf_type *types, int size);
/* The same hash of columns cols[0..nkeys) in that order (NULL: the first
 * nkeys): a row's rank agrees with rf_dist_row_rank's of any projection of
 * it that puts those columns first. */
int rf_dist_row_rank_cols(const rf_table *t, size_t row, int nkeys, const int *cols, const rf_type *types, int size);
/* The words sending row i of t to rank dest[i] (-1: to every rank) makes:
 * *buf (malloc'd) holds, for rank 0, then 1, ..., a row count and the
 * rows (a string as its length and its bytes in words); counts[d] the
 * words for rank d. Returns the total. */
size_t rf_dist_pack(const rf_table *t, const rf_type *types, const int *dest, int size, uint64_t **buf,
                    size_t *counts);
/* Appends the rows of buf (counts[s] words from each of size senders, as
 * rf_dist_pack writes them) to t, interning strings. False if malformed. */
bool rf_dist_unpack(const uint64_t *buf, const size_t *counts, int size, const rf_type *types, rf_table *t);

#endif
