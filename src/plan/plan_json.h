/* SPDX-License-Identifier: MIT */
/*
 * The ring plan document (plan/plan_json.c): ring-plan's output, text or
 * JSON by the pn_out mode.  It is read back by pn_plan_read_json
 * (plan/plan.h) and pn_plan_load_json (plan/plan_job.h).
 */
#ifndef PENNY_PLAN_JSON_H
#define PENNY_PLAN_JSON_H

#include "base/out.h"
#include "plan/plan.h"

/*
 * Plan p into out: shape, layouts, nodes, rings (only their count in text
 * with summary), NIC loads, bandwidth, notes and the violations viol.  The
 * top-level object is left open for what the caller adds (ring-plan's
 * schedule); the caller closes it with pn_out_close_object.
 */
void pn_plan_write_begin(struct pn_out *out, const struct pn_plan *p,
			 const struct pn_plan_msgs *viol, int summary);

/* Messages a then b (either NULL) as the array key; in text one "label: msg" line each. */
void pn_plan_write_msgs(struct pn_out *out, const char *key, const char *label,
			const struct pn_plan_msgs *a, const struct pn_plan_msgs *b);

#endif
