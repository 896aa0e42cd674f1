/* A local string dictionary: what one thread uses while it parses its piece
 * of an input file, because the global dictionary (rf_str_intern) is not
 * thread-safe and must hand out ids in an order that does not depend on
 * thread timing.
 *
 * Local ids are dense from 0 in order of first insertion. Strings are not
 * copied unless asked (they point into the file text, which outlives the
 * dictionary); copies live in the dictionary's own arena. Afterwards,
 * rf_strdict_to_global interns the strings into the global dictionary in
 * local-id order: doing that for the pieces of a file in file order gives
 * every string exactly the global id a sequential parse would give it (its
 * first appearance in the file is in the earliest piece that holds it, at
 * that piece's first occurrence, which has the smallest local id among the
 * strings that piece adds). */
#ifndef RF_STRDICT_H
#define RF_STRDICT_H

#include "rf_value.h"

typedef struct rf_strdict rf_strdict;

rf_strdict *rf_strdict_new(void);
void rf_strdict_free(rf_strdict *d);

/* The local id of s (added if new). copy = false: s must stay valid and
 * unchanged for the dictionary's life. */
uint32_t rf_strdict_add(rf_strdict *d, const char *s, size_t len, bool copy);
/* The same with h = rf_str_hash(s, len) already known. */
uint32_t rf_strdict_add_hashed(rf_strdict *d, const char *s, size_t len, uint64_t h, bool copy);
/* A hint: a string of hash h is added soon (callers that batch their adds
 * hide the cache miss of each random slot behind the others). */
void rf_strdict_prefetch(const rf_strdict *d, uint64_t h);
size_t rf_strdict_count(const rf_strdict *d);
/* The text of local id `id` (not NUL-terminated) and its length. */
const char *rf_strdict_get(const rf_strdict *d, uint32_t id, size_t *len);

/* Interns d's strings into the global dictionary in local-id order:
 * ids[i] := the global id of local id i (ids has rf_strdict_count(d)
 * entries). Not thread-safe (the global dictionary is not). */
void rf_strdict_to_global(const rf_strdict *d, rf_word *ids);

#endif
