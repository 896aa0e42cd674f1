/* The filter+projection stage shared by MAP and JOIN (internal). */
#ifndef RF_PRIMS_EMIT_H
#define RF_PRIMS_EMIT_H

#include "prims_internal.h"

typedef struct rf_emitter {
    rf_eval *filter;          /* NULL: always true */
    /* The filter as a chain of conjuncts (its top-level ANDs and lazy ANDs,
     * if(a, b, false)), when it has two or more: each is evaluated on the
     * rows the ones before it kept, narrowing the selection (rf_emit_batch). */
    int nconj;
    rf_code *conj_code;       /* [nconj] views into the filter's instructions */
    rf_eval **conj;           /* [nconj] */
    uint16_t sel2[RF_BATCH];
    int nproj;
    int *projcol;             /* >= 0: projection is that column (copy) */
    rf_eval **proj;           /* evaluators for computed projections */
    uint16_t sel[RF_BATCH];
    bool uses_rows;           /* some code reads RF_EX_ROWID */
} rf_emitter;

void rf_emitter_init(rf_emitter *em, const rf_code *filter, int nproj, const rf_code *proj);
void rf_emitter_free(rf_emitter *em);
/* Every evaluator of em looks up the tabulated instructions (rf_eval_use_bits). */
void rf_emitter_use_bits(rf_emitter *em, const rf_id_bits *tabs, int ntabs);
/* The rows' positions in the inputs for the next batches (JOIN: gathered
 * per batch; see rf_eval_set_rows). */
void rf_emitter_set_rows(rf_emitter *em, const rf_word *row0, const rf_word *row1);
/* Rows base..base+n-1 of cols -> filtered, projected rows appended to out. */
bool rf_emit_batch(rf_emitter *em, rf_word *const *cols, size_t base, int n, rf_table *out,
                   rf_status *st);
/* First failed piece status (in piece order, so errors are deterministic). */
bool rf_pieces_status(rf_status *sts, int n, rf_status *st);
/* After a parallel pass: out := the n pieces concatenated in order
 * (cleared when one failed, st then its status); frees pieces and sts. */
bool rf_pieces_finish(rf_table *pieces, rf_status *sts, int n, rf_table *out, rf_status *st);

#endif
