/* Select planning applied to a generated kernel's filter (docs/weaver.md
 * s. 5; the planner is weaver/selplan.c). C only (the .cu files never see
 * it): codegen.c emits a filter as its plan says, prims.c samples the
 * conjuncts' selectivities and launches the plan's kernels, backend_gpu.c
 * shows the plan in `explain --cuda`.
 *
 * The filter planned is the device's code (prims.c `prepare`: string
 * functions tabulated into RF_DOP_LOOKUP instructions), so a conjunct is a
 * top-level && operand of the code that actually runs. A lookup neither
 * faults (tabulation covers every id of its column) nor interns (the host
 * interned while tabulating, for every id, whatever the plan), so for the
 * planner it is a string function of cost class RF_SELOP_STR. */
#ifndef RF_CODEGEN_PLAN_H
#define RF_CODEGEN_PLAN_H

#include "cuda_internal.h"
#include "selplan.h"

/* Kernels one split plan may use (its `|`s + 1): each is a function of the
 * generated module (codegen.c loads at most that many). */
#define RF_CG_MAX_PARTS 8
/* Rows a selectivity sample evaluates (an even stride over the input). */
#define RF_CG_SAMPLE_ROWS 65536

typedef struct rf_cg_plan {
    rf_selsplit split;     /* the conjuncts; conj[i].code is the device code of conjunct i */
    rf_selplan plan;       /* evaluation order and connectors */
    int nparts;            /* kernels: 1 + the plan's splits */
    int part_start[RF_CG_MAX_PARTS + 1]; /* positions in plan.order where each kernel starts */
    bool forced;           /* RF_WEAVE_SELPLAN named it */
    bool sampled;          /* chosen by the model from sampled selectivities */
    double sel[RF_SELPLAN_MAX]; /* sampled, when sampled */
    double sample_rows;
    double rows;           /* input rows (candidate pairs) the model costed */
    double model_ns;       /* the model's cost of the plan, and of the unchanged filter */
    double identity_ns;
    bool splits_dropped;   /* a forced or chosen `|` became && (the kernel has one part) */
    bool calibrated;       /* the model used a calibration file (else the defaults) */
    bool deferred;         /* chosen, but the unchanged filter ran: the plan's module was not
                              loaded and what it saves did not yet pay for making it
                              (rf_codegen_pays) */
    double bound_ns;       /* > 0: not sampled, since no plan could save more than this
                              (rf_selplan_gain_bound), less than loading a module */
} rf_cg_plan;

/* Splits the device filter into its conjuncts (pl zeroed first). Returns
 * the number of conjuncts, -1 on malformed code (st set). With fewer than
 * 2 the filter needs no plan: rf_cg_plan_free and emit it as it is. */
int rf_cg_plan_split(const rf_code *filter, rf_cg_plan *pl, rf_status *st);

/* The plan RF_WEAVE_SELPLAN forces for these conjuncts: 1 (set), 0 (unset,
 * or naming another number of conjuncts), -1 (illegal: st says why). A
 * forced `|` becomes && when !allow_split (a kernel of one part: the
 * reducing gather, or more rows than 32-bit row ids hold). */
int rf_cg_plan_forced(rf_cg_plan *pl, bool allow_split, rf_status *st);

/* *out := pl with the identity plan (the unchanged filter's order, as the
 * program's kernels are made ahead: backend_gpu.c), for a deferred plan.
 * Shares pl's conjuncts: never rf_cg_plan_free it. */
void rf_cg_plan_identity_of(const rf_cg_plan *pl, bool allow_split, rf_cg_plan *out);

/* The model's plan (rf_selplan_choose) for sampled selectivities sel[]
 * over `rows` rows, or, with sel NULL, the unchanged filter (identity:
 * original order, all &&). Also fills the model numbers for the note. */
bool rf_cg_plan_choose(rf_cg_plan *pl, const double *sel, double sample_rows, double rows, bool allow_split,
                       const rf_selcalib *cal, rf_status *st);

/* The note `--stats` prints: "1&0&&2 (chosen: sampled sel 0.10 0.52 0.90
 * of 65536 rows; model 1.230 ms, unchanged filter 1.500 ms; calibration
 * defaults)" (malloc'd). */
char *rf_cg_plan_note(const rf_cg_plan *pl);

void rf_cg_plan_free(rf_cg_plan *pl);

/* The source of rf_selsample(RfCols l, RfCols r, const u64 *lo, const u64
 * *off, u64 nl, u64 m, u64 stride, RfEnv env, u64 *counts): for the rows
 * (candidate pairs) t * stride, t < m, counts[c] += 1 where conjunct c
 * holds, each conjunct evaluated on its own (a fault counts as not
 * holding; env.err should be scratch). */
char *rf_codegen_selsample_source(bool join, int al, const rf_cg_plan *pl);

/* Names of the select kernels of a plan of nparts parts: "rf_select" for
 * one, else "rf_select_p0".. (static strings). */
const char *rf_codegen_select_name(int nparts, int part);

/* Records a plan's note (rf_cg_plan_note) for the output `what`, for
 * rf_cuda_print_select_plans. */
void rf_codegen_note_plan(rf_cuda_ctx *c, const char *what, const char *note);

/* The calibration of this context's device: calib-<device>.tsv in the
 * kernel cache directory when present (read once), else the defaults. */
const rf_selcalib *rf_codegen_selcalib(rf_cuda_ctx *c);

#endif
