/* Kernel Weaver (thesis ch. 4, docs/weaver.md): groups Harmony kernels
 * into FUSED kernels, so a row flows through several operators without
 * its intermediate results being written out and read back.
 *
 * Two halves. The structural pass (rf_weave) is device-independent and
 * part of the compiled program: it classifies every producer -> consumer
 * edge (thread, CTA or kernel dependence), groups kernels joined by edges
 * a fused kernel can keep inside (thesis Alg. 1), and rewrites each group
 * into one RF_K_FUSED kernel holding its members. The backends decide at
 * run time how far to fuse (a group can always run as its members).
 * rf_fused_compose turns a thread-dependent chain into the one plain
 * MAP/JOIN kernel it equals, which both backends run with their ordinary
 * operators (the GPU compiles it with NVRTC: intermediates in registers). */
#ifndef RF_WEAVER_H
#define RF_WEAVER_H

#include "hir.h"

typedef struct rf_weave_opts {
    bool reduce;             /* form SORT -> AGG reducing gathers */
    bool set;                /* end JOIN chains whose rows only a SORT reads
                                in a set gather (JOIN -> SORT, the
                                semi-naive step's join and dedup) */
    bool probe;              /* outside loops, a set gather also takes the
                                SORT that only orders its JOIN's probe side
                                (rf_fused_probe_sort; operands swapped when
                                that SORT feeds the second input) */
} rf_weave_opts;

typedef struct rf_weave_info {
    int groups;              /* FUSED kernels made */
    int members;             /* kernels inside them */
    int reduces;             /* of which end in a reducing gather */
    int shared;              /* of which have several outputs (MAPs of one input) */
    int sets;                /* of which end in a set gather */
    int probes;              /* of which begin with a probe side's SORT */
} rf_weave_info;

/* Rewrites p in place (after rf_hir_lower; recomputes liveness).
 * info may be NULL. Never fails on a verified program. */
void rf_weave(rf_hprogram *p, const rf_weave_opts *o, rf_weave_info *info);

/* Replaces every FUSED kernel by its members (where the group stood, in
 * their order) and recomputes liveness: the program rf_weave was given,
 * up to where the members stand (a group that took members from earlier
 * kernels or blocks returns them all at its own place, which runs them in
 * the same order with the same inputs; a JOIN whose operands a probe
 * side's SORT swapped stays swapped, which makes the same rows). */
void rf_unweave(rf_hprogram *p);

/* The members first..last of FUSED kernel fk, a thread chain (a MAP or
 * JOIN, then MAPs each reading the previous one's result), as one plain
 * kernel: out = members[last].out, inputs those of members[first].
 * Filters nest with IF, so a member's code is evaluated on exactly the
 * rows it would see unfused or more (a fault on an extra row is caught by
 * the backend, which then runs the members one by one). False when the
 * members are not such a chain. */
bool rf_fused_compose(const rf_hprogram *p, const rf_kernel *fk, int first, int last, rf_kernel *out);

/* The longest prefix of fk's members that forms a thread chain (index of
 * its last member), or -1 when member 0 cannot head one. */
int rf_fused_chain_end(const rf_hprogram *p, const rf_kernel *fk);
/* The same from member first (1 after a probe side's SORT). */
int rf_fused_chain_end_from(const rf_hprogram *p, const rf_kernel *fk, int first);

/* The input (0 or 1) whose rows a composed JOIN chain keeps whole: it
 * projects exactly that input's columns in their order (al, ar: the
 * inputs' arities). Its set gather is then a semi-join: the input's rows
 * that have a passing match, in the input's order, each once (sorted
 * inputs are sets). -1 otherwise, or without keys. */
int rf_join_kept_side(const rf_kernel *chain, int al, int ar);

/* An aggregate's argument over the columns a composed chain makes (the
 * reducing gather's rows), rewritten over the chain's inputs, so that one
 * kernel computes it from the input row as it computes the projections
 * (string functions included: tabulated like theirs). False when c reads
 * a row position (of the sorted rows: no meaning before the sort) or a
 * column the chain does not make. */
bool rf_fused_compose_arg(const rf_kernel *chain, const rf_code *c, rf_code *out);

/* A group of several outputs as its branches: branch i is the members
 * from the one after ends[i-1] (from 0 for i = 0) to ends[i], the member
 * that writes fk's output i. Returns the count (fused->nout), or -1 when
 * the members do not write the outputs in their order. Each branch can
 * then be composed (rf_fused_compose) into one kernel. */
int rf_fused_branches(const rf_kernel *fk, int ends[RF_KERNEL_VARS_MAX]);

/* Whether code may stop the run with an error on some row (checked
 * arithmetic, casts, date arithmetic, substr): such code must not be
 * dropped or moved to rows it would not see. */
bool rf_code_may_fault(const rf_code *c);

#endif
