/* SPDX-License-Identifier: MIT */
/*
 * The ring plan document (plan/plan_json.c): ring-plan's output, text or
 * JSON by the pn_out mode (the NIC load table's text is ring-plan's).  It is read back by pn_plan_read_json
 * (plan/plan.h) and pn_plan_load_json (plan/plan_job.h).
 */
#ifndef PENNY_PLAN_JSON_H
#define PENNY_PLAN_JSON_H

#include "base/out.h"
#include "plan/plan.h"

/*
 * Plan p into out: shape, layouts, nodes, rings (only their count in text
 * with summary) and in JSON every NIC's load; then, after what the caller
 * puts between (ring-plan's NIC load table in text), pn_plan_write_tail:
 * bandwidth, notes and the violations viol.  The top-level object is left
 * open for what the caller adds (ring-plan's schedule); the caller closes
 * it with pn_out_close_object.
 */
void pn_plan_write_begin(struct pn_out *out, const struct pn_plan *p, int summary);
void pn_plan_write_tail(struct pn_out *out, const struct pn_plan *p,
			const struct pn_plan_msgs *viol);

/* NICs of the same name, rail, loads and state across nodes: count of
 * nodes, the first one's index. */
struct pn_plan_load_group {
	const char *nic;
	int rail, send, recv, active, count, first;
};
/* The plan's NIC loads (rings per NIC and direction) grouped, in first-seen
 * order; *out malloc'ed (NULL when none).  0 or -ENOMEM. */
int pn_plan_load_groups(const struct pn_plan *p, struct pn_plan_load_group **out, int *n);

/* Messages a then b (either NULL) as the array key; in text one "label: msg" line each. */
void pn_plan_write_msgs(struct pn_out *out, const char *key, const char *label,
			const struct pn_plan_msgs *a, const struct pn_plan_msgs *b);

#endif
