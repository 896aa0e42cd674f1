/* Helpers shared by the files of the query planner (not part of the
 * module's interface). */
#ifndef RF_PLAN_INTERNAL_H
#define RF_PLAN_INTERNAL_H

#include "plan.h"

/* Frees what a command owns and leaves it zeroed (plan_free.c). */
void rf_plan_cmd_release(rf_plan_cmd *c);

/* True for the commands that end a block. */
static inline bool rf_plan_cmd_is_control(rf_cmdkind k)
{
    return k == RF_CMD_JUMP || k == RF_CMD_BRANCH_EMPTY || k == RF_CMD_HALT || k == RF_CMD_BRANCH_JOIN;
}

/* True for the commands that write their dst (all but control commands and
 * CHECK_KEYS, whose dst is -1). */
static inline bool rf_plan_cmd_has_dst(rf_cmdkind k)
{
    return !rf_plan_cmd_is_control(k) && k != RF_CMD_CHECK_KEYS;
}

/* Number of source relations the command reads (0, 1 or 2). */
int rf_plan_cmd_nsrcs(rf_cmdkind k);

const char *rf_plan_cmd_name(rf_cmdkind k);   /* "MapJoin" */
const char *rf_plan_relkind_name(rf_relkind k);
const char *rf_plan_aggfn_name(rf_aggfn f);   /* "count" */
/* One command as `explain --plan` prints it, without its comment:
 * "t3 := MapJoin path.delta, edge on ($1 = $2) project ($0, $3)".
 * malloc'd. Also the text of explain --dot --plan's rows. */
char *rf_plan_cmd_text(const rf_plan *plan, const rf_plan_cmd *c);

#endif
