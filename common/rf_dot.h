/* Helpers shared by the Graphviz writers of `redfox explain --dot`
 * (queryplan/plan_dot.c, harmony_ir/hir_dot.c): text made safe for DOT's
 * HTML-like labels, and the rough row estimates the labels show.
 *
 * Row estimates. Neither the plan nor the Harmony IR carries cardinalities
 * (the planner orders joins by bound variables, not by sizes), so the
 * pictures use a deliberately simple estimate, documented in
 * docs/observability.md:
 *   - a loaded relation: at most its inline facts plus its input file's
 *     lines
 *     (unknown without either: its rows can only come from --input),
 *     counted when the file is small (<= 64 KiB: "<= N", duplicates are
 *     dropped by the load) or extrapolated from the first 64 KiB and the
 *     file size ("~N");
 *   - an operator whose output cannot outgrow its inputs gets their bound
 *     (filter, projection, sort, difference, antijoin: <= in0; union:
 *     <= in0 + in1; aggregate: <= in0, one row without keys; copy: in0);
 *     a cross product in0 * in1;
 *   - a keyed join, and anything computed inside a loop (its size changes
 *     each iteration), is unknown: "rows ?".
 * Nothing here runs the program: `redfox run --profile` shows real rows. */
#ifndef RF_DOT_H
#define RF_DOT_H

#include <stdio.h>

#include "rf_common.h"

/* Writes s for an HTML-like label: & < > " escaped, control characters as
 * spaces, bytes that are not UTF-8 as '?', and at most max_chars
 * characters (then "..."); max_chars 0: no limit. */
void rf_dot_html(FILE *out, const char *s, size_t max_chars);

/* Length of the UTF-8 sequence starting at s (1..4), or 0 if s does not
 * start a valid one (overlong forms and surrogates included; a NUL ends
 * the text). Also what runtime/trace.c escapes JSON strings with. */
int rf_utf8_length(const unsigned char *s);

/* A control-flow graph as both writers see it: blocks in program order,
 * each with at most two successors. */
typedef struct rf_dot_block {
    const char *label;       /* "stratum1.loop" */
    int next[2];             /* successors, -1 for none: next[0] is the
                                fall-through, the jump, or the branch's
                                target when its conditions are all empty;
                                next[1] the branch's other target */
    const char *cond;        /* a branch's condition ("empty(path.delta)"),
                                for the edge labels; NULL for none */
} rf_dot_block;

/* Writes `digraph NAME { ... }`: write_node(out, b, ctx) writes block b's
 * node statement, whose id must be "b<index>". A fixpoint loop (blocks
 * t..s where s has a back edge to t <= s) is drawn as a cluster titled
 * "fixpoint loop <label of t>" and its back edge bold, dashed and red
 * ("next iteration"; the exit edge names the condition), so that a loop
 * reads at a glance; nested loops nest, a range that overlaps
 * another without nesting gets only the styled back edge. */
void rf_dot_write_cfg(FILE *out, const char *name, int nblocks, const rf_dot_block *blocks,
                      void (*write_node)(FILE *out, int b, void *ctx), void *ctx);

typedef enum rf_rowest_kind {
    RF_ROWS_UNKNOWN = 0,
    RF_ROWS_EXACT,           /* exactly `rows` (inline facts, a CLEAR) */
    RF_ROWS_AT_MOST          /* at most `rows` */
} rf_rowest_kind;

typedef struct rf_rowest {
    rf_rowest_kind kind;
    bool approx;             /* `rows` extrapolated from a file's size */
    double rows;
} rf_rowest;

/* Inline facts plus the lines of the input file at path (may be NULL). */
rf_rowest rf_rowest_input(size_t nfacts, const char *path);
rf_rowest rf_rowest_exact(double rows);
/* At most as many rows as a (unknown stays unknown). */
rf_rowest rf_rowest_at_most(rf_rowest a);
/* At most a + b, and exactly a * b. */
rf_rowest rf_rowest_sum(rf_rowest a, rf_rowest b);
rf_rowest rf_rowest_product(rf_rowest a, rf_rowest b);
/* "rows 16", "rows <= 16", "rows ~6.0M", "rows <= ~6.0M", "rows ?". */
void rf_rowest_format(rf_rowest e, char *buf, size_t cap);

#endif
