/* See pipeline.h. */
#include "pipeline.h"

#include "../queryplan/plan.h"
#include "../weaver/weaver.h"

#include <stdlib.h>
#include <string.h>

void rf_pipeline_default_outputs(rf_program *prog)
{
    if (prog->souffle)
        return;
    for (int i = 0; i < prog->npreds; i++)
        if (prog->preds[i].is_output)
            return;
    for (int i = 0; i < prog->npreds; i++)
        if (prog->preds[i].has_rules)
            prog->preds[i].is_output = true;
}

bool rf_pipeline_weave(rf_hprogram *hp, bool fuse, rf_status *st)
{
    if (fuse) {
        /* RF_WEAVE_PROBE=0: no probe-side SORT in set gathers (for
         * measuring them; docs/weaver.md s. 4.1) */
        const char *probe = getenv("RF_WEAVE_PROBE");
        rf_weave_opts wo = {.reduce = true, .set = true, .probe = !(probe && strcmp(probe, "0") == 0)};
        rf_weave(hp, &wo, NULL);
    } else {
        rf_unweave(hp);
    }
    hp->woven = fuse;
    rf_status vst;
    rf_status_init(&vst);
    if (!rf_hir_verify(hp, &vst))
        return rf_fail(st, RF_PIPELINE_INTERNAL_ERROR, "invalid Harmony IR after %s: %s",
                       fuse ? "fusion" : "unfusing", vst.message);
    return true;
}

rf_hprogram *rf_pipeline_lower(const rf_program *prog, bool fuse, rf_join_mode join, rf_status *st)
{
    rf_plan_options po = {.optimize = true, .join = join};
    rf_plan *plan = rf_plan_build(prog, &po);
    if (!plan) {
        rf_fail(st, RF_PIPELINE_INTERNAL_ERROR, "the planner failed");
        return NULL;
    }
    rf_hprogram *hp = rf_hir_lower(plan);
    rf_plan_free(plan);
    if (!hp) {
        rf_fail(st, RF_PIPELINE_INTERNAL_ERROR, "lowering to the Harmony IR failed");
        return NULL;
    }
    rf_hir_liveness(hp);
    rf_status vst;
    rf_status_init(&vst);
    if (!rf_hir_verify(hp, &vst)) {
        rf_fail(st, RF_PIPELINE_INTERNAL_ERROR, "invalid Harmony IR: %s", vst.message);
        rf_hir_free(hp);
        return NULL;
    }
    if (!rf_pipeline_weave(hp, fuse, st)) {
        rf_hir_free(hp);
        return NULL;
    }
    return hp;
}
