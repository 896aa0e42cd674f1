/* The compiler's back half as one step: a checked program (frontend) ->
 * query plan -> Harmony IR with liveness -> Kernel Weaver fusion, verified
 * after each step. Shared by the command line (cli/main.c) and libredfox
 * (lib/), so that both run exactly the same kernels for a program.
 * Nothing here prints: failures come back in an rf_status whose code is
 * RF_PIPELINE_INTERNAL_ERROR (the compiler produced something invalid). */
#ifndef RF_PIPELINE_H
#define RF_PIPELINE_H

#include "../frontend/program.h"
#include "../harmony_ir/hir.h"
#include "../queryplan/plan.h"

/* The command line's exit status for an internal error (EX_SOFTWARE). */
#define RF_PIPELINE_INTERNAL_ERROR 70

/* Without any output predicate, every predicate defined by rules is one
 * (LogiQL; a Soufflé program outputs what its .output directives say). */
void rf_pipeline_default_outputs(rf_program *prog);

/* Fuses hp's kernels (fuse) or runs every kernel on its own (!fuse: also
 * undoes the groups of a compiled .rfx), then verifies. On failure st says
 * "invalid Harmony IR after fusion: ..." (or "after unfusing"). */
bool rf_pipeline_weave(rf_hprogram *hp, bool fuse, rf_status *st);

/* prog -> verified, woven Harmony IR; NULL with st set ("the planner
 * failed", "lowering to the Harmony IR failed", "invalid Harmony IR: ...",
 * or rf_pipeline_weave's message). prog's outputs must be final. join:
 * how bodies of several atoms are joined (--join; RF_JOIN_AUTO lets the
 * planner choose a multiway join for cyclic bodies). */
rf_hprogram *rf_pipeline_lower(const rf_program *prog, bool fuse, rf_join_mode join, rf_status *st);

#endif
