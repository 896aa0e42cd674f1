/* Internals shared by the CPU primitives: the thread pool entry point, row
 * comparison and galloping search on columnar tables, and the batch
 * evaluator with selection vectors. Not part of the public API. */
#ifndef RF_PRIMS_INTERNAL_H
#define RF_PRIMS_INTERNAL_H

#include "../rf_prims.h"

/* Rows per batch of the vectorised evaluator (selection offsets fit in 16
 * bits, buffers stay in L1/L2). */
#define RF_BATCH 1024
/* Below this many rows an operator runs as a single piece: thread start-up
 * would cost more than it saves. */
#define RF_PAR_MIN_ROWS 65536

/* How many pieces an operator over `rows` rows should use. */
int rf_pieces_for(size_t rows, int per_thread);
/* Whether codes make new strings (substr, concat): they intern into the
 * one string dictionary, which is not thread-safe and hands out ids in
 * call order, so such a MAP or JOIN runs as one piece (deterministic ids,
 * no race). */
bool rf_codes_intern(const rf_code *filter, int nproj, const rf_code *proj);

/* Lexicographic compare of row i of a and row j of b on the first k
 * columns, words unsigned. */
static inline int rf_rowcmp(const rf_table *a, size_t i, const rf_table *b, size_t j, int k)
{
    for (int c = 0; c < k; c++) {
        rf_word x = a->cols[c][i], y = b->cols[c][j];
        if (x != y)
            return x < y ? -1 : 1;
    }
    return 0;
}

/* First row in [lo, hi) of t whose k-prefix is >= (upper: >) the k-prefix
 * of row kr of key table kt; hi if none. Exponential then binary search,
 * so skipping a run of length d costs O(log d). */
size_t rf_gallop_lower(const rf_table *t, size_t lo, size_t hi, const rf_table *kt, size_t kr, int k);
size_t rf_gallop_upper(const rf_table *t, size_t lo, size_t hi, const rf_table *kt, size_t kr, int k);

/* Splits sorted a and b into `n` pieces by key ranges of the first k
 * columns: piece p is a[as[p], as[p+1]) with b[bs[p], bs[p+1]); rows with
 * equal keys never straddle pieces. as and bs have n+1 entries. */
void rf_split_key_ranges(const rf_table *a, const rf_table *b, int k, int n, size_t *as, size_t *bs);

/* Transparent-huge-page hint for big arrays (memhint.c). */
void rf_advise_huge(void *p, size_t bytes);
void rf_table_advise(rf_table *t);

/* Concatenates piece tables (which are freed) into out (initialised). */
void rf_concat_pieces(rf_table *pieces, int n, rf_table *out);

/* The vectorised evaluator of one rf_code. Each instance owns its scratch
 * buffers, so one per thread. */
typedef struct rf_eval rf_eval;
rf_eval *rf_eval_new(const rf_code *c);
void rf_eval_free(rf_eval *ev);
/* Evaluates the code on rows base + sel[i] (sel offsets < RF_BATCH) of
 * cols; returns an array indexed by offset (valid at the selected
 * offsets), or NULL with st filled on a fault. Only selected rows are
 * evaluated, and `&&`/`||` evaluate their right operand only where needed. */
const rf_word *rf_eval_run(rf_eval *ev, rf_word *const *cols, size_t base,
                           const uint16_t *sel, int nsel, rf_status *st);
/* Where RF_EX_ROWID reads the rows' positions in input 0 and 1 (arrays by
 * offset, like the columns); NULL (the default) for input 0 means the
 * rows are base + offset of input 0 itself, as in a MAP. */
void rf_eval_set_rows(rf_eval *ev, const rf_word *row0, const rf_word *row1);
/* like/contains of instruction `at` (a column against a constant pattern)
 * already known for every id of [lo, lo + n), a bit each: a MAP whose rows
 * hold a dense range of string ids tabulates it once over the range, in id
 * order (map.c, string_tables), instead of matching each row's text (q13's
 * order comments, in customer order: a cache miss a row). Ids outside are
 * matched as usual. The evaluator keeps the pointer; tabs must outlive it. */
typedef struct rf_id_bits {
    const rf_instr *at;
    rf_word lo;
    size_t n;
    const uint64_t *bits;
} rf_id_bits;
void rf_eval_use_bits(rf_eval *ev, const rf_id_bits *tabs, int ntabs);
/* 0, 1, ..., RF_BATCH-1 */
extern const uint16_t rf_iota16[RF_BATCH];

#endif
