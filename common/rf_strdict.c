/* The local string dictionary (rf_strdict.h): open addressing over local
 * ids, slots tagged with the hash's high bits like the global one; each
 * entry keeps its full hash so that rf_strdict_to_global does not hash the
 * text again. */
#include "rf_strdict.h"

#include <stdlib.h>
#include <string.h>

#define COPY_CHUNK ((size_t)1 << 16)

typedef struct entry {
    const char *s;
    size_t len;
    uint64_t hash;
} entry;

struct rf_strdict {
    entry *ents;
    size_t n, cap;
    uint64_t *slots;       /* (hash >> 32) << 32 | (id + 1); 0 = empty */
    size_t nslots;
    char **chunks;         /* copies (copy = true) */
    size_t nchunks, capchunks;
    char *free_at;
    size_t free_len;
};

rf_strdict *rf_strdict_new(void) { return rf_calloc(1, sizeof(rf_strdict)); }

void rf_strdict_free(rf_strdict *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->nchunks; i++)
        free(d->chunks[i]);
    free(d->chunks);
    free(d->ents);
    free(d->slots);
    free(d);
}

size_t rf_strdict_count(const rf_strdict *d) { return d->n; }

const char *rf_strdict_get(const rf_strdict *d, uint32_t id, size_t *len)
{
    *len = d->ents[id].len;
    return d->ents[id].s;
}

static uint64_t slot_of(uint64_t h, size_t id) { return (h >> 32 << 32) | ((uint64_t)id + 1); }

static void grow_slots(rf_strdict *d)
{
    size_t nslots = d->nslots ? 2 * d->nslots : 256;
    uint64_t *slots = rf_calloc(nslots, sizeof *slots);
    rf_hint_huge_pages(slots, nslots * sizeof *slots);
    for (size_t id = 0; id < d->n; id++) {
        size_t i = d->ents[id].hash & (nslots - 1);
        while (slots[i])
            i = (i + 1) & (nslots - 1);
        slots[i] = slot_of(d->ents[id].hash, id);
    }
    free(d->slots);
    d->slots = slots;
    d->nslots = nslots;
}

static char *new_chunk(rf_strdict *d, size_t size)
{
    if (d->nchunks == d->capchunks) {
        d->capchunks = d->capchunks ? 2 * d->capchunks : 8;
        d->chunks = rf_realloc(d->chunks, rf_mul_size(d->capchunks, sizeof *d->chunks));
    }
    return d->chunks[d->nchunks++] = rf_malloc(size ? size : 1);
}

static const char *copy_text(rf_strdict *d, const char *s, size_t len)
{
    char *dst;
    if (len > COPY_CHUNK / 4) {
        dst = new_chunk(d, len);
    } else {
        if (len > d->free_len) {
            d->free_at = new_chunk(d, COPY_CHUNK);
            d->free_len = COPY_CHUNK;
        }
        dst = d->free_at;
        d->free_at += len;
        d->free_len -= len;
    }
    memcpy(dst, s, len);
    return dst;
}

void rf_strdict_prefetch(const rf_strdict *d, uint64_t h)
{
    if (d->nslots)
        __builtin_prefetch(&d->slots[h & (d->nslots - 1)]);
}

uint32_t rf_strdict_add(rf_strdict *d, const char *s, size_t len, bool copy)
{
    return rf_strdict_add_hashed(d, s, len, rf_str_hash(s, len), copy);
}

uint32_t rf_strdict_add_hashed(rf_strdict *d, const char *s, size_t len, uint64_t h, bool copy)
{
    if (2 * (d->n + 1) > d->nslots)
        grow_slots(d);
    uint64_t tag = h >> 32 << 32;
    size_t i = h & (d->nslots - 1);
    for (uint64_t sl; (sl = d->slots[i]) != 0; i = (i + 1) & (d->nslots - 1)) {
        if ((sl >> 32 << 32) != tag)
            continue;
        const entry *e = &d->ents[(uint32_t)sl - 1];
        if (e->len == len && memcmp(e->s, s, len) == 0)
            return (uint32_t)sl - 1;
    }
    if (d->n == UINT32_MAX - 1)
        rf_out_of_memory(len);
    if (d->n == d->cap) {
        d->cap = d->cap ? 2 * d->cap : 256;
        d->ents = rf_realloc(d->ents, rf_mul_size(d->cap, sizeof *d->ents));
    }
    d->ents[d->n] = (entry){copy ? copy_text(d, s, len) : s, len, h};
    d->slots[i] = slot_of(h, d->n);
    return (uint32_t)d->n++;
}

/* Slots are prefetched this many strings ahead: enough to cover a memory
 * latency with the work of the inserts in between. */
#define PREFETCH_AHEAD 16

void rf_strdict_to_global(const rf_strdict *d, rf_word *ids)
{
    rf_str_reserve(d->n);
    for (size_t i = 0; i < d->n && i < PREFETCH_AHEAD; i++)
        rf_str_prefetch(d->ents[i].hash);
    for (size_t i = 0; i < d->n; i++) {
        if (i + PREFETCH_AHEAD < d->n)
            rf_str_prefetch(d->ents[i + PREFETCH_AHEAD].hash);
        ids[i] = rf_str_intern_hashed(d->ents[i].s, d->ents[i].len, d->ents[i].hash);
    }
}
